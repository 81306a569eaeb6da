/* affinity.h — OMNIPROF_WORKER_CPUS: the CPUs omniprof's own threads run on.
 *
 * omniprof's threads (the SDK's delivery threads, the database writer, the tool's flush and signal
 * threads, the backends' helpers, and the CUDA backend's work on CUPTI's thread) read, copy and
 * store records beside the program. On a machine whose cores the program shares with them (SMT
 * siblings, one socket's memory bandwidth), the program can pay for that work: naming other CPUs
 * keeps it off the program's, even when the program was started under `taskset` (affinity is
 * per thread). Unset, nothing changes. A list that names no CPU of this machine, or CPUs the
 * process may not use (a cpuset), is reported once and the threads run where the program's may. */
#ifndef OMNIPROF_COMMON_AFFINITY_H
#define OMNIPROF_COMMON_AFFINITY_H

#include <pthread.h>

/* pthread_create of one of omniprof's threads, on OMNIPROF_WORKER_CPUS (attr may be NULL; its
 * affinity is set here). Where the system refuses those CPUs, the thread starts without them
 * (one warning). Returns pthread_create's result. */
int op_worker_thread_create(pthread_t *th, pthread_attr_t *attr, void *(*fn)(void *), void *arg);

/* Moves the calling thread there: a thread omniprof did not create that runs omniprof's work
 * (CUPTI's buffer-completion thread). Once per thread is enough; cheap when unset. */
void op_worker_pin_self(void);

#endif
