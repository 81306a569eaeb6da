/* regions_prog.c — user-API ranges and wrapped calls for the region-profile test: two worker
 * threads each run 3 times: range "outer" { spin; range "inner" { spin } }, then meet at a
 * barrier; main joins them. */
#include <pthread.h>
#include <stdio.h>

#include "omniprof/user.h"

static pthread_barrier_t g_bar;

__attribute__((noinline)) static double spin(long n)
{
    volatile double x = 0;
    for (long i = 0; i < n; i++) x += (double)i;
    return x;
}

static void *body(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3; i++) {
        omniprof_range_push("outer");
        spin(3000000);
        omniprof_range_push("inner");
        spin(6000000);
        omniprof_range_pop();
        omniprof_range_pop();
    }
    pthread_barrier_wait(&g_bar);
    return NULL;
}

int main(void)
{
    pthread_t t[2];
    pthread_barrier_init(&g_bar, NULL, 2);
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, body, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("regions done\n");
    return 0;
}
