/* an_pipeline.c — a two-thread pipeline for `omniprof analyze` (tests/analyze/analyze_check.py):
 * STEPS times, the producer works PRODUCE_MS in the range "produce" (inside the range "step")
 * and the consumer CONSUME_MS in the range "consume"; both then meet at a barrier (the
 * hand-over). On paper a step lasts max(PRODUCE_MS, CONSUME_MS): with the consumer slower,
 * halving "consume" (the knob) shortens each step to max(P, C/2).
 * usage: an_pipeline [STEPS [PRODUCE_MS [CONSUME_MS]]] */
#include <pthread.h>
#include <stdio.h>

#include "an_work.h"
#include "omniprof/user.h"

static int steps;
static double produce_ms, consume_ms;
static pthread_barrier_t bar;

static void *producer(void *arg)
{
    (void)arg;
    for (int i = 0; i < steps; i++) {
        omniprof_range_push("step");
        omniprof_range_push("produce");
        an_work_ms(produce_ms);
        omniprof_range_pop();
        pthread_barrier_wait(&bar);
        omniprof_range_pop();
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (int i = 0; i < steps; i++) {
        omniprof_range_push("consume");
        an_work_ms(consume_ms);
        omniprof_range_pop();
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    steps = (int)an_arg(argc, argv, 1, 10);
    produce_ms = an_arg(argc, argv, 2, 20);
    consume_ms = an_arg(argc, argv, 3, 40);
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t p, c;
    pthread_create(&p, NULL, producer, NULL);
    pthread_create(&c, NULL, consumer, NULL);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    printf("pipeline done: %d steps\n", steps);
    return 0;
}
