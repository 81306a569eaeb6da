/* an_forkjoin.c — fork-join with one unequal worker for `omniprof analyze`
 * (tests/analyze/analyze_check.py): ROUNDS times the main thread starts 3 workers that work
 * WORK_MS in the range "work" and one that works BIG_MS in the range "work_big", and joins the
 * four. On paper a round lasts max(WORK_MS, BIG_MS); BIG_MS = WORK_MS is the clean program
 * (balanced: nothing to fix).
 * usage: an_forkjoin [ROUNDS [WORK_MS [BIG_MS]]] */
#include <pthread.h>
#include <stdio.h>

#include "an_work.h"
#include "omniprof/user.h"

static double work_ms, big_ms;

static void *worker(void *arg)
{
    int big = arg != NULL;
    omniprof_range_push(big ? "work_big" : "work");
    an_work_ms(big ? big_ms : work_ms);
    omniprof_range_pop();
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = (int)an_arg(argc, argv, 1, 6);
    work_ms = an_arg(argc, argv, 2, 20);
    big_ms = an_arg(argc, argv, 3, 60);
    static int one = 1;
    for (int r = 0; r < rounds; r++) {
        omniprof_range_push("round");
        pthread_t t[4];
        for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, i == 3 ? &one : NULL);
        for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
        omniprof_range_pop();
    }
    printf("forkjoin done: %d rounds\n", rounds);
    return 0;
}
