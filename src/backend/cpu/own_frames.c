/* own_frames.c — omniprof's own code in sampled stacks.
 *
 * A stack sampled in the program passes through omniprof's code where omniprof stands between
 * two of the program's frames: the thread-start trampoline of every thread created through the
 * pthread_create wrapper (start_thread → omniprof_thread_start → the thread's function), and the
 * function wrappers (the program's pthread_mutex_lock → omniprof's wrapper → libc's). perf or nsys
 * would show neither, and a flame graph of the program should not either: a lone omniprof frame
 * between two frames of the program is dropped from the stack. The innermost frame is always kept,
 * and so are two or more omniprof frames in a row: a sample taken while omniprof's code really ran
 * on the thread (a wrapper's bookkeeping, a record being written, down into libc) is profiler
 * time, and shows as such.
 *
 * The text ranges are those of the libomniprof* libraries loaded when op_cpu_own_frames_init runs
 * (the backend's start; a library loaded later keeps its frames). The table is written outside
 * any handler, before the timers are armed, and published with a release store of its length;
 * the signal handler only reads it (async-signal-safe). */
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/cpu_internal.h"

#define OWN_MAX_RANGES 32

static struct {
    uint64_t lo, hi;
} g_ranges[OWN_MAX_RANGES];
static _Atomic uint32_t g_n_ranges;

static int collect_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uint32_t *n = data;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libomniprof", 11) != 0) return 0;
    for (int i = 0; i < info->dlpi_phnum && *n < OWN_MAX_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        g_ranges[*n].lo = (uint64_t)info->dlpi_addr + ph->p_vaddr;
        g_ranges[*n].hi = g_ranges[*n].lo + ph->p_memsz;
        (*n)++;
    }
    return 0;
}

void op_cpu_own_frames_init(void)
{
    atomic_store_explicit(&g_n_ranges, 0, memory_order_release);
    uint32_t n = 0;
    dl_iterate_phdr(collect_cb, &n);
    atomic_store_explicit(&g_n_ranges, n, memory_order_release);
}

static int is_own(uint64_t pc, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (pc >= g_ranges[i].lo && pc < g_ranges[i].hi) return 1;
    return 0;
}

uint32_t op_cpu_drop_own_frames(uint64_t *frames, uint32_t n)
{
    uint32_t nr = atomic_load_explicit(&g_n_ranges, memory_order_acquire);
    if (!nr || n < 3) return n;
    uint32_t out = 1; /* the innermost frame stays */
    for (uint32_t i = 1; i < n; i++) {
        /* a lone own frame between two of the program's passes through; two or more in a row
         * are omniprof's own work (a wrapper's bookkeeping calling libc) and stay */
        if (i + 1 < n && is_own(frames[i], nr) && !is_own(frames[i - 1], nr) && !is_own(frames[i + 1], nr)) continue;
        frames[out++] = frames[i];
    }
    return out;
}
