/* preload_internal.h — what the files of libomniprof-preload.so share: the registered clients,
 * the process identity (for vfork children), the real libc functions and the fd registry's
 * internal calls. Nothing here is exported. */
#ifndef OMNIPROF_PRELOAD_INTERNAL_H
#define OMNIPROF_PRELOAD_INTERNAL_H

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "preload/preload.h"

#define OP_PRELOAD_MAX_CLIENTS 8

/* Registered clients, sorted by order; entries are published with release stores, read with
 * acquire (a reader may miss a client registered concurrently, never see half of one). */
extern const op_preload_hooks *_Atomic g_op_preload_clients[OP_PRELOAD_MAX_CLIENTS];
extern _Atomic int g_op_preload_n_clients;

/* for (each registered client VAR, in order) { ... } */
#define FOR_CLIENTS(VAR)                                                                           \
    for (int i_ = 0, n_ = atomic_load_explicit(&g_op_preload_n_clients, memory_order_acquire); i_ < n_; i_++) \
        for (const op_preload_hooks *VAR = atomic_load_explicit(&g_op_preload_clients[i_], memory_order_acquire); VAR; \
             VAR = NULL)

/* The pid of this process image as the library knows it: set at load and in a forked child;
 * a vfork child (which shares the parent's memory) sees getpid() != it. */
extern _Atomic pid_t g_op_preload_pid;

/* libc's `name` (the next definition after this library), looked up once per call site;
 * NULL if absent. */
#define OP_REAL(type, name)                                                                   \
    ({                                                                                        \
        static _Atomic(type) real_;                                                           \
        type r_ = atomic_load_explicit(&real_, memory_order_relaxed);                         \
        if (!r_) {                                                                            \
            r_ = (type)dlsym(RTLD_NEXT, #name);                                               \
            atomic_store_explicit(&real_, r_, memory_order_relaxed);                          \
        }                                                                                     \
        r_;                                                                                   \
    })

/* fd_registry.c (and fd_interpose.c's capture and sync scope): reached from other libraries
 * through omniprof_preload_fd_api's table only */
int omniprof_preload_fd_adopt(int fd, unsigned flags);
int omniprof_preload_fd_is_ours(int fd);
int omniprof_preload_log_fd_checked(void);
void omniprof_preload_fd_capture(int on);
int omniprof_preload_fd_captured(int *out, int cap);
void omniprof_preload_fd_sync_scope(int delta);
int omniprof_preload_fd_close(int fd);
int omniprof_preload_fd_resolve(int fd);
int omniprof_preload_fd_verify(int fd);
int omniprof_preload_fd_io_begin(int may_wait);
void omniprof_preload_fd_io_end(void);
bool op_preload_fd_bit(int fd);
int op_preload_fd_relocate(int fd);
void op_preload_fd_relocate_begin(void);
void op_preload_fd_relocate_end(void);
int op_preload_fd_list_locked(unsigned lo, unsigned hi, int *out, int cap);
void op_preload_fd_lock(void);
void op_preload_fd_unlock(void);
void op_preload_fd_at_fork_child(void);
void op_preload_fd_init(void);

#endif /* OMNIPROF_PRELOAD_INTERNAL_H */
