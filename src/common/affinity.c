/* affinity.c — OMNIPROF_WORKER_CPUS (affinity.h). */
#include "common/affinity.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "common/log.h"
#include "common/number.h"
#include "common/settings.h"

static cpu_set_t g_set;
static int g_on; /* 1: g_set names CPUs this process may use */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void parse_once(void)
{
    const char *list = op_setting_str(OP_SET_WORKER_CPUS);
    if (!list || !*list) return;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) CPU_ZERO(&allowed);
    CPU_ZERO(&g_set);
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed) && op_idlist_has(list, (uint64_t)c)) {
            CPU_SET(c, &g_set);
            n++;
        }
    if (n == 0) {
        op_warn("OMNIPROF_WORKER_CPUS='%s' names no CPU this process may run on (sched_getaffinity); omniprof's "
                "threads run where the program's may",
                list);
        return;
    }
    g_on = 1;
}

void op_worker_attr_affinity(pthread_attr_t *attr)
{
    pthread_once(&g_once, parse_once);
    if (g_on && attr) pthread_attr_setaffinity_np(attr, sizeof g_set, &g_set);
}

void op_worker_pin_self(void)
{
    pthread_once(&g_once, parse_once);
    if (!g_on) return;
    static atomic_int warned;
    if (sched_setaffinity(0, sizeof g_set, &g_set) != 0 && !atomic_exchange(&warned, 1))
        op_warn("OMNIPROF_WORKER_CPUS: cannot move a thread of omniprof's work there: %s", strerror(errno));
}
