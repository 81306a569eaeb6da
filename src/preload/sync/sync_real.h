/* sync_real.h — libc's function behind each of libomniprof-sync.so's interposers: DECLARE(name)
 * makes a cached pointer, REAL(name) returns it (looked up with dlsym(RTLD_NEXT) the first time;
 * each file resolves its names in a constructor, so that a first call from a signal handler does
 * not dlsym). NULL where libc has no such function. */
#ifndef OMNIPROF_PRELOAD_SYNC_REAL_H
#define OMNIPROF_PRELOAD_SYNC_REAL_H

#include <dlfcn.h>

#define REAL(name) real_fn_##name()
#define DECLARE(name)                                                               \
    static __typeof__(&name) real_##name;                                           \
    static inline __typeof__(&name) real_fn_##name(void)                            \
    {                                                                               \
        if (!real_##name) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name); \
        return real_##name;                                                         \
    }

#endif /* OMNIPROF_PRELOAD_SYNC_REAL_H */
