/* user_program.c — a program that uses the user API in a known pattern; its stdout and exit
 * status must be the same with and without the SDK (test sdk.user_unchanged), and with the
 * json tool its records must match tests/sdk/check_user_records.py exactly. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "omniprof/user.h"

#define ITER 50

static omniprof_range_id_t g_range;

static void *worker(void *arg)
{
    int n = (int)(long)arg;
    char name[32];
    snprintf(name, sizeof name, "worker-%d", n);
    omniprof_name_thread(name);
    for (int i = 0; i < ITER; i++) {
        omniprof_range_push("work");
        omniprof_range_push("step");
        omniprof_range_pop();
        omniprof_range_pop();
    }
    if (n == 0) omniprof_range_stop(g_range);
    return NULL;
}

int main(void)
{
    omniprof_name_thread("main");
    omniprof_mark("begin");
    int l0 = omniprof_range_push("outer");
    int l1 = omniprof_range_push("inner");
    omniprof_mark("inside inner");
    int p1 = omniprof_range_pop();
    int p0 = omniprof_range_pop();
    int pe = omniprof_range_pop(); /* nothing open: -1, no record */
    g_range = omniprof_range_start("process-range");
    pthread_t th[2];
    for (long i = 0; i < 2; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    omniprof_pause();
    omniprof_mark("hidden");
    omniprof_resume();
    for (int i = 0; i < 3; i++) omniprof_progress("items");
    omniprof_progress_begin("txn");
    omniprof_progress_end("txn");
    omniprof_mark("end");
    static char big[5000];
    memset(big, 'x', sizeof big - 1);
    omniprof_mark(big);
    printf("levels %d %d %d %d empty-pop %d\n", l0, l1, p1, p0, pe);
    printf("done\n");
    return 0;
}
