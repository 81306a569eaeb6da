/* mpi_abi.c — which MPI the process runs and how its handles, constants and statuses look.
 *
 * Two ABIs exist in practice: Open MPI (handles are pointers to predefined objects such as
 * ompi_mpi_comm_world; MPI_Status {SOURCE, TAG, ERROR, cancelled, ucount}) and the MPICH family
 * (MPICH, Intel MPI, MVAPICH, Cray MPICH: handles are ints with fixed values, MPI_Status
 * {count_lo, count_hi, SOURCE, TAG, ERROR}). The backend is built against neither: it recognizes
 * the library by the symbols it exports, once, at the first MPI call (the library may be dlopened
 * after our constructor, as mpi4py does), and reads everything through this table. Only Open MPI
 * is tested (tests/mpi); the MPICH values are those of its mpi.h. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend/mpi/mpi_internal.h"
#include "common/log.h"

op_mpi_abi g_op_mpi_abi;
const char *const op_mpi_op_names[16] = {"MPI_MAX",  "MPI_MIN",  "MPI_SUM",    "MPI_PROD",    "MPI_LAND",
                                         "MPI_BAND", "MPI_LOR",  "MPI_BOR",    "MPI_LXOR",    "MPI_BXOR",
                                         "MPI_MINLOC", "MPI_MAXLOC", "MPI_REPLACE", "MPI_NO_OP", NULL, NULL};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static op_mpi_handle sym(const char *name) { return (op_mpi_handle)dlsym(RTLD_DEFAULT, name); }

static void detect(void)
{
    op_mpi_abi a;
    memset(&a, 0, sizeof a);
    if (sym("ompi_mpi_comm_world")) {
        a.family = OP_MPI_OPENMPI;
        a.handle_size = sizeof(void *);
        a.status_size = 24;
        a.status_source = 0;
        a.status_tag = 4;
        a.comm_world = sym("ompi_mpi_comm_world");
        a.comm_self = sym("ompi_mpi_comm_self");
        a.comm_null = sym("ompi_mpi_comm_null");
        a.request_null = sym("ompi_request_null");
        a.byte = sym("ompi_mpi_byte");
        a.win_null = sym("ompi_mpi_win_null");
        a.any_source = -1, a.proc_null = -2, a.root = -4, a.any_tag = -1, a.undefined = -32766;
        a.in_place = 1, a.status_ignore = 0;
        static const char *const ops[14] = {"ompi_mpi_op_max",  "ompi_mpi_op_min",    "ompi_mpi_op_sum",
                                            "ompi_mpi_op_prod", "ompi_mpi_op_land",   "ompi_mpi_op_band",
                                            "ompi_mpi_op_lor",  "ompi_mpi_op_bor",    "ompi_mpi_op_lxor",
                                            "ompi_mpi_op_bxor", "ompi_mpi_op_minloc", "ompi_mpi_op_maxloc",
                                            "ompi_mpi_op_replace", "ompi_mpi_op_no_op"};
        for (int i = 0; i < 14; i++) a.ops[i] = sym(ops[i]);
    } else if (sym("MPIR_Err_return_comm") || sym("MPI_Comm_c2f") || sym("PMPI_Comm_c2f")) {
        a.family = OP_MPI_MPICH;
        a.handle_size = 4;
        a.status_size = 20;
        a.status_source = 8;
        a.status_tag = 12;
        a.comm_world = 0x44000000, a.comm_self = 0x44000001, a.comm_null = 0x04000000;
        a.request_null = 0x2c000000, a.byte = 0x4c00010d, a.win_null = 0x20000000;
        a.any_source = -2, a.proc_null = -1, a.root = -3, a.any_tag = -1, a.undefined = -32766;
        a.in_place = (uintptr_t)-1, a.status_ignore = 1;
        for (int i = 0; i < 14; i++) a.ops[i] = 0x58000001u + (unsigned)i;
    }
    g_op_mpi_abi = a;
    if (a.family == OP_MPI_UNKNOWN) op_warn("mpi: the MPI library is neither Open MPI nor of the MPICH family; MPI calls are not traced");
}

bool op_mpi_abi_ready(void)
{
    pthread_once(&g_once, detect);
    return g_op_mpi_abi.family != OP_MPI_UNKNOWN;
}

op_mpi_handle op_mpi_handle_at(const void *array, size_t i)
{
    if (g_op_mpi_abi.handle_size == 4) {
        uint32_t v;
        memcpy(&v, (const char *)array + 4 * i, 4);
        return v;
    }
    uintptr_t v;
    memcpy(&v, (const char *)array + sizeof v * i, sizeof v);
    return v;
}

void *op_mpi_pmpi(const char *name)
{
    char pname[64];
    snprintf(pname, sizeof pname, "P%s", name);
    void *f = dlsym(RTLD_DEFAULT, pname);
    return f ? f : dlsym(RTLD_NEXT, name);
}

static int status_int(const void *status, size_t off)
{
    int v;
    memcpy(&v, (const char *)status + off, sizeof v);
    return v;
}

int op_mpi_status_source(const void *status) { return status_int(status, g_op_mpi_abi.status_source); }
int op_mpi_status_tag(const void *status) { return status_int(status, g_op_mpi_abi.status_tag); }

uint64_t op_mpi_status_bytes(const void *status)
{
    typedef int (*get_count_fn)(const void *, void *, int *);
    static get_count_fn get_count;
    if (!get_count) get_count = (get_count_fn)op_mpi_pmpi("MPI_Get_count");
    int n = 0;
    if (!get_count || get_count(status, (void *)g_op_mpi_abi.byte, &n) != 0 || n < 0) return 0;
    return (uint64_t)n;
}
