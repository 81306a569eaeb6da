/* many_threads.c — starts N threads (argv[1], default 10000) that are all alive at once (they
 * wait on one barrier with the main thread), then each spins briefly and exits (odd ones through
 * pthread_exit). Prints the
 * number of threads that ran. Stacks are 64 KiB so 10,000 threads fit any machine. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t g_bar;
static atomic_int g_ran;

static void *body(void *arg)
{
    pthread_barrier_wait(&g_bar);
    volatile double x = 0;
    for (int i = 0; i < 20000; i++) x += i;
    atomic_fetch_add(&g_ran, 1);
    if ((intptr_t)arg & 1) pthread_exit(NULL); /* odd threads leave through pthread_exit */
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    pthread_t *th = calloc((size_t)n, sizeof *th);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_barrier_init(&g_bar, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i], &attr, body, (void *)(intptr_t)i) != 0) {
            fprintf(stderr, "pthread_create %d failed\n", i);
            return 1;
        }
    pthread_barrier_wait(&g_bar); /* all n threads are alive here */
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    printf("threads ran=%d\n", atomic_load(&g_ran));
    free(th);
    return atomic_load(&g_ran) == n ? 0 : 1;
}
