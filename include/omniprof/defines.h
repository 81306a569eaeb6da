/* omniprof/defines.h — export, C linkage and versioning macros shared by every public header.
 *
 * Only what carries OMNIPROF_API is exported from the omniprof libraries; everything else is
 * built with -fvisibility=hidden so that names in a preloaded tool never collide with the
 * application's. */
#ifndef OMNIPROF_DEFINES_H
#define OMNIPROF_DEFINES_H

#define OMNIPROF_VERSION_MAJOR 0
#define OMNIPROF_VERSION_MINOR 1
#define OMNIPROF_VERSION_PATCH 0
/* X*10000 + Y*100 + Z, the same number omniprof_get_version_number() returns at run time. */
#define OMNIPROF_VERSION_NUMBER \
    (OMNIPROF_VERSION_MAJOR * 10000 + OMNIPROF_VERSION_MINOR * 100 + OMNIPROF_VERSION_PATCH)
#define OMNIPROF_VERSION_STRING "0.1.0"

#if defined(__GNUC__)
#define OMNIPROF_API __attribute__((visibility("default")))
#define OMNIPROF_NONNULL(...) __attribute__((nonnull(__VA_ARGS__)))
#define OMNIPROF_WEAK __attribute__((weak))
#else
#define OMNIPROF_API
#define OMNIPROF_NONNULL(...)
#define OMNIPROF_WEAK
#endif

#ifdef __cplusplus
#define OMNIPROF_EXTERN_C_BEGIN extern "C" {
#define OMNIPROF_EXTERN_C_END }
#else
#define OMNIPROF_EXTERN_C_BEGIN
#define OMNIPROF_EXTERN_C_END
#endif

/* Zero an options struct, padding included, and set its size (libbpf's LIBBPF_OPTS). */
#define OMNIPROF_OPTS(TYPE, NAME, ...)                                         \
    TYPE NAME;                                                                 \
    do {                                                                       \
        __builtin_memset(&NAME, 0, sizeof(TYPE));                              \
        NAME = (TYPE){.size = sizeof(TYPE), __VA_ARGS__};                      \
    } while (0)

#endif /* OMNIPROF_DEFINES_H */
