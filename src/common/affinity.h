/* affinity.h — OMNIPROF_WORKER_CPUS: the CPUs omniprof's own threads run on.
 *
 * omniprof's threads (the SDK's delivery threads, the database writer, the tool's flush thread,
 * and the CUDA backend's work on CUPTI's thread) read, copy and store records beside the program.
 * On a machine whose cores the program shares with them (SMT siblings, one socket's memory
 * bandwidth), the program can pay for that work. Naming other CPUs keeps it off the program's.
 * Unset, nothing changes. A list that names no CPU this process may use is reported once and
 * ignored (the threads stay where they are). */
#ifndef OMNIPROF_COMMON_AFFINITY_H
#define OMNIPROF_COMMON_AFFINITY_H

#include <pthread.h>

/* Before pthread_create of one of omniprof's threads: their CPUs into attr (no-op when unset). */
void op_worker_attr_affinity(pthread_attr_t *attr);

/* Moves the calling thread there: a thread omniprof did not create that runs omniprof's work
 * (CUPTI's buffer-completion thread). Once per thread is enough; cheap when unset. */
void op_worker_pin_self(void);

#endif
