/* deep_stack.c — CPU test and bench program with a deep call stack of known function names,
 * for comparing where stacks are unwound (OMNIPROF_SAMPLING_UNWIND=handler|deferred; cpu.unwind,
 * bench/cpu/bench_sampling.py).
 *
 * usage: cputest_deep_stack [UNITS [DEPTH [CONTEXT_UNITS]]]
 *   A worker thread runs deep_outer -> deep_middle -> deep_rec (DEPTH times, default 40, each
 *   frame holding a 256-byte buffer, so the stack is ~12 KiB deep) -> deep_leaf, which spins
 *   UNITS units (default 2000). With CONTEXT_UNITS > 0, a second thread then spins that many
 *   units in ctx_leaf on a makecontext stack of its own (malloc'd: outside the thread's stack,
 *   so a deferred-mode sampler must unwind it in the signal handler) while the main thread
 *   spins the same in sigalt_leaf inside a SIGUSR1 handler running on a sigaltstack.
 * Prints "deep done depth=D" at the end. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#define UNIT 200000L

static long g_units = 2000, g_ctx_units = 0;
static int g_depth = 40;
static volatile double g_sink, g_sink_ctx, g_sink_alt; /* one per thread that writes */

__attribute__((noinline)) static double spin(long units)
{
    volatile double x = 0;
    for (long i = 0; i < units * UNIT; i++) x += (double)i * 0.5 + 1.0;
    return x;
}

__attribute__((noinline)) double deep_leaf(long units) { return spin(units) + 1.0; }

__attribute__((noinline)) double deep_rec(int level, long units)
{
    volatile char pad[256]; /* a real frame: the stack grows ~300 bytes per level */
    memset((char *)pad, level, sizeof pad);
    double r = level > 1 ? deep_rec(level - 1, units) : deep_leaf(units);
    return r + pad[level % 256];
}

__attribute__((noinline)) double deep_middle(long units) { return deep_rec(g_depth, units) * 1.0; }
__attribute__((noinline)) double deep_outer(long units) { return deep_middle(units) + 0.5; }

static void *deep_thread(void *arg)
{
    (void)arg;
    g_sink += deep_outer(g_units);
    return NULL;
}

/* ---- makecontext: a stack the thread's bounds do not hold ---- */
static ucontext_t g_main_ctx, g_fiber_ctx;

__attribute__((noinline)) double ctx_leaf(long units) { return spin(units) + 2.0; }

static void fiber_main(void) { g_sink_ctx += ctx_leaf(g_ctx_units); }

static void *ctx_thread(void *arg)
{
    (void)arg;
    size_t size = 256 * 1024;
    void *stack = malloc(size);
    if (!stack) return NULL;
    getcontext(&g_fiber_ctx);
    g_fiber_ctx.uc_stack.ss_sp = stack;
    g_fiber_ctx.uc_stack.ss_size = size;
    g_fiber_ctx.uc_link = &g_main_ctx;
    makecontext(&g_fiber_ctx, fiber_main, 0);
    swapcontext(&g_main_ctx, &g_fiber_ctx);
    free(stack);
    return NULL;
}

/* ---- sigaltstack: a signal handler of the program on its alternate stack ---- */
__attribute__((noinline)) double sigalt_leaf(long units) { return spin(units) + 3.0; }

static void on_usr1(int sig)
{
    (void)sig;
    g_sink_alt += sigalt_leaf(g_ctx_units);
}

int main(int argc, char **argv)
{
    if (argc > 1) g_units = atol(argv[1]);
    if (argc > 2) g_depth = atoi(argv[2]);
    if (argc > 3) g_ctx_units = atol(argv[3]);
    if (g_depth < 1) g_depth = 1;
    pthread_t th;
    pthread_create(&th, NULL, deep_thread, NULL);
    pthread_join(th, NULL);
    if (g_ctx_units > 0) {
        pthread_create(&th, NULL, ctx_thread, NULL);
        stack_t ss = {.ss_sp = malloc(256 * 1024), .ss_size = 256 * 1024, .ss_flags = 0};
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sa.sa_flags = SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        if (ss.ss_sp && sigaltstack(&ss, NULL) == 0 && sigaction(SIGUSR1, &sa, NULL) == 0) raise(SIGUSR1);
        pthread_join(th, NULL);
    }
    printf("deep done depth=%d\n", g_depth);
    return 0;
}
