/* attach_inject.h — load a shared library into a running process, the way a debugger's
 * `call dlopen("lib", RTLD_NOW)` does, for `omniprof attach` (attach_inject.c says how). */
#ifndef OMNIPROF_CLI_ATTACH_INJECT_H
#define OMNIPROF_CLI_ATTACH_INJECT_H

#include <stddef.h>
#include <sys/types.h>

typedef enum op_inject_status {
    OP_INJECT_OK = 0,
    OP_INJECT_NOT_PERMITTED, /* ptrace refused: another user, Yama, no CAP_SYS_PTRACE, not dumpable */
    OP_INJECT_NO_PROCESS,    /* no such process (or it ended) */
    OP_INJECT_UNSUPPORTED,   /* architecture, no dlopen in the target's libc, ... */
    OP_INJECT_NO_SAFE_POINT, /* every try found the threads inside the loader or the C library */
    OP_INJECT_FAILED,        /* ptrace or memory access failed midway (the thread was restored) */
} op_inject_status;

/* Make one thread of `pid` call dlopen(lib_path, RTLD_NOW | RTLD_GLOBAL) and return to what it
 * was doing. Returns once the call is under way (the thread is no longer traced); the caller
 * learns that the library ran from the library itself (attach: its control socket). On
 * failure `err` names the cause and what would make it work. Never leaves a thread stopped. */
op_inject_status op_attach_inject(pid_t pid, const char *lib_path, char *err, size_t errlen);

#endif /* OMNIPROF_CLI_ATTACH_INJECT_H */
