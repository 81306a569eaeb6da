/* pyext_spin.c — libcputest_pyspin.so: a native function that a Python test program calls
 * through ctypes (py_workload.py), so that a sample's native leaf lies under a Python caller. */
#include <stdint.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spins for ns of the calling thread's CPU time; returns a value so the loop stays. */
__attribute__((noinline, visibility("default"))) uint64_t pyspin_work(uint64_t ns)
{
    volatile uint64_t x = 0;
    uint64_t end = now_ns() + ns;
    while (now_ns() < end)
        for (int i = 0; i < 1000; i++) x += (uint64_t)i * 7u;
    return x;
}
