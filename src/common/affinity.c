/* affinity.c — OMNIPROF_WORKER_CPUS (affinity.h). */
#include "common/affinity.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/number.h"
#include "common/settings.h"

static cpu_set_t g_set;
static _Atomic int g_on; /* 1: g_set names CPUs of this machine; 0 after the system refused them */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static atomic_int g_refused_said;

static void parse_once(void)
{
    const char *list = op_setting_str(OP_SET_WORKER_CPUS);
    if (!list || !*list) return;
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    if (conf < 1 || conf > CPU_SETSIZE) conf = CPU_SETSIZE;
    CPU_ZERO(&g_set);
    int n = 0;
    for (int c = 0; c < conf; c++)
        if (op_idlist_has(list, (uint64_t)c)) {
            CPU_SET(c, &g_set);
            n++;
        }
    if (n == 0) {
        op_warn("OMNIPROF_WORKER_CPUS='%s' names no CPU of this machine (0-%ld); omniprof's threads run where the "
                "program's may",
                list, conf - 1);
        return;
    }
    atomic_store(&g_on, 1);
}

static void refused(int err)
{
    atomic_store(&g_on, 0);
    if (!atomic_exchange(&g_refused_said, 1))
        op_warn("OMNIPROF_WORKER_CPUS='%s': the system refuses those CPUs to this process (%s); omniprof's threads "
                "run where the program's may",
                op_setting_str(OP_SET_WORKER_CPUS), strerror(err));
}

int op_worker_thread_create(pthread_t *th, pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    pthread_once(&g_once, parse_once);
    pthread_attr_t own;
    int own_attr = 0;
    if (atomic_load(&g_on) && !attr) {
        pthread_attr_init(&own);
        attr = &own;
        own_attr = 1;
    }
    int pinned = atomic_load(&g_on) && pthread_attr_setaffinity_np(attr, sizeof g_set, &g_set) == 0;
    int rc = pthread_create(th, attr, fn, arg);
    if (rc == EINVAL && pinned) { /* CPUs outside the process's cpuset */
        refused(rc);
        pthread_attr_setaffinity_np(attr, 0, &g_set); /* glibc: size 0 takes the affinity out of attr */
        rc = pthread_create(th, attr, fn, arg);
    }
    if (own_attr) pthread_attr_destroy(&own);
    return rc;
}

void op_worker_pin_self(void)
{
    pthread_once(&g_once, parse_once);
    if (!atomic_load(&g_on)) return;
    if (sched_setaffinity(0, sizeof g_set, &g_set) != 0) refused(errno);
}
