/* producer_consumer.c — a producer and a consumer around a bounded queue guarded by one mutex
 * and two condition variables; the consumer does its work while holding the lock, so the
 * producer, ready with its next item, waits on the lock (a lock-contended pipeline). One
 * progress point per consumed item (COZ_PROGRESS, named after this file and line).
 *
 * On paper (the two threads run in parallel, consuming costs C = 2P): items complete at the
 * pace of the slower stage, max(P, C) = C. Speeding the consumer's loop by s gives
 * max(P, C(1-s)): the program speeds up by min(s, 50 %); speeding the producer's loop changes
 * nothing (0 %). Usage: producer_consumer [seconds to run] [ms of producing work per item]. */
#include <coz.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "causal_work.h"

#define CAPACITY 4

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_not_empty = PTHREAD_COND_INITIALIZER, g_not_full = PTHREAD_COND_INITIALIZER;
static uint64_t g_queue[CAPACITY];
static int g_count, g_head;
static long g_units;
static double g_seconds; /* the producer's item after that time is a 0: the end */
static uint64_t g_sum;

static void *producer(void *arg)
{
    (void)arg;
    for (long k = 1;; k++) {
        uint64_t x = (uint64_t)k;
        for (long i = 0; i < g_units; i++) CAUSAL_STEP(x); /* LINE_PRODUCE */
        bool last = causal_elapsed() >= g_seconds;
        pthread_mutex_lock(&g_lock);
        while (g_count == CAPACITY) pthread_cond_wait(&g_not_full, &g_lock);
        g_queue[(g_head + g_count++) % CAPACITY] = last ? 0 : (x | 1);
        pthread_cond_signal(&g_not_empty);
        pthread_mutex_unlock(&g_lock);
        if (last) break;
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&g_lock);
        while (g_count == 0) pthread_cond_wait(&g_not_empty, &g_lock);
        uint64_t x = g_queue[g_head];
        if (x == 0) { /* the producer's last item */
            pthread_mutex_unlock(&g_lock);
            break;
        }
        g_head = (g_head + 1) % CAPACITY;
        g_count--;
        for (long i = 0; i < 2 * g_units; i++) CAUSAL_STEP(x); /* LINE_CONSUME */
        g_sum += x;
        pthread_cond_signal(&g_not_full);
        pthread_mutex_unlock(&g_lock);
        COZ_PROGRESS;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    g_seconds = argc > 1 ? atof(argv[1]) : 10.0;
    double ms = argc > 2 ? atof(argv[2]) : 1.0;
    causal_elapsed();
    g_units = (long)(ms * (double)causal_units_per_ms());
    pthread_t p, c;
    pthread_create(&p, NULL, producer, NULL);
    pthread_create(&c, NULL, consumer, NULL);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    printf("producer_consumer: %s\n", g_sum ? "done" : "no work");
    return 0;
}
