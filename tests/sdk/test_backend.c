/* test_backend.c — src/sdk/backend.c and the backend half of tracing.c, with a fake backend
 * registered under the name "cpu" before the SDK initializes (OMNIPROF_INIT_AT_LOAD=0, set
 * by CTest), so the real CPU backend is never loaded: duplicate registration, start after the
 * lock (once, because a kind it serves was configured), on_context_change (also at a pause, after
 * a flush, and at a resume), flush from
 * omniprof_flush_buffer, operation names / iteration / argument iteration delegated to it,
 * agents appended after the CPU agents (late: only once its "driver" is up, when the query may
 * not initialize it), symbolization delegated, and finalize at exit; which
 * library serves a kind comes from the backends' manifests, read without loading them. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "sdk_test.h"

static _Atomic int g_start, g_change, g_flush, g_finalize, g_symbolize, g_args;

static omniprof_status_t fake_start(void)
{
    atomic_fetch_add(&g_start, 1);
    return OMNIPROF_STATUS_SUCCESS;
}
/* what the backend saw of its kind at its last on_context_change / flush */
static _Atomic int g_change_active = -1, g_flush_active = -1;
static void fake_change(void)
{
    atomic_store(&g_change_active, op_sdk_kind_active(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE) && !op_sdk_is_paused());
    atomic_fetch_add(&g_change, 1);
}
static void fake_flush(void)
{
    atomic_store(&g_flush_active, op_sdk_kind_active(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE) && !op_sdk_is_paused());
    atomic_fetch_add(&g_flush, 1);
}
static void fake_finalize(void) { atomic_fetch_add(&g_finalize, 1); }
static const char *fake_op_name(uint32_t kind, int32_t op)
{
    if (kind == OMNIPROF_BUFFER_TRACING_CPU_SAMPLE && op == OMNIPROF_CPU_SAMPLE_CPUTIME) return "cputime";
    if (kind == OMNIPROF_BUFFER_TRACING_CPU_SAMPLE && op == OMNIPROF_CPU_SAMPLE_REALTIME) return "realtime";
    return NULL;
}
static int fake_iterate(uint32_t kind, int (*cb)(int32_t, void *), void *data)
{
    if (kind != OMNIPROF_BUFFER_TRACING_CPU_SAMPLE) return kind == OMNIPROF_BUFFER_TRACING_THREAD ? 0 : -1;
    for (int32_t op = 1; op < OMNIPROF_CPU_SAMPLE_LAST; op++)
        if (cb(op, data)) break;
    return 0;
}
static omniprof_status_t fake_args(const omniprof_record_header_t *h, omniprof_arg_iterate_cb_t cb, void *data)
{
    atomic_fetch_add(&g_args, 1);
    omniprof_arg_t a = {.name = "frames", .type = OMNIPROF_ARG_TYPE_UINT, .value.u64 = 3};
    cb(h->kind, 1, 0, &a, "3", data);
    return OMNIPROF_STATUS_SUCCESS;
}
/* Its "driver" is up once the program initialized it (g_driver_up), as CUDA after the
 * program's first call; before, a query that may not initialize it hears "later". */
static _Atomic int g_driver_up, g_asked_lazy, g_asked_init;
static size_t fake_agents(omniprof_agent_v0_t *out, size_t max, int may_init)
{
    atomic_fetch_add(may_init ? &g_asked_init : &g_asked_lazy, 1);
    if (!atomic_load(&g_driver_up)) {
        if (!may_init) return OP_AGENTS_LATER;
        atomic_store(&g_driver_up, 1);
    }
    if (max < 1) return 1;
    memset(out, 0, sizeof *out);
    out->name = "Fake GPU";
    out->vendor_name = "Fake";
    return 1;
}
static omniprof_status_t fake_symbolize(uint64_t addr, omniprof_symbol_cb_t cb, void *data)
{
    atomic_fetch_add(&g_symbolize, 1);
    omniprof_symbol_info_t s = {.size = sizeof s, .address = addr, .function = "fake_fn", .line = 42};
    cb(&s, data);
    return OMNIPROF_STATUS_SUCCESS;
}

OP_BACKEND_MANIFEST(g_fake_manifest) = {
    .magic = OP_BACKEND_MANIFEST_MAGIC,
    .size = sizeof(op_backend_manifest),
    .name = "cpu",
    .buffer_kinds = {OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE,
                     OMNIPROF_BUFFER_TRACING_FUNCTION_WRAPPER, OMNIPROF_BUFFER_TRACING_THREAD},
};

static const op_backend g_fake = {
    .size = sizeof(op_backend),
    .name = "cpu",
    .start = fake_start,
    .on_context_change = fake_change,
    .flush = fake_flush,
    .finalize = fake_finalize,
    .operation_name = fake_op_name,
    .iterate_operations = fake_iterate,
    .iterate_record_args = fake_args,
    .query_agents = fake_agents,
    .symbolize = fake_symbolize,
    .manifest = &g_fake_manifest,
};

/* A descriptor whose manifest names another backend is refused. */
static const op_backend g_mismatch = {
    .size = sizeof(op_backend),
    .name = "other",
    .manifest = &g_fake_manifest,
};

static omniprof_context_id_t g_ctx;
static omniprof_buffer_id_t g_buf;
static _Atomic uint64_t g_got;

static int init(omniprof_client_finalize_t f, void *d)
{
    (void)f; (void)d;
    omniprof_create_context(&g_ctx);
    omniprof_create_buffer(g_ctx, 4096, 4096, OMNIPROF_BUFFER_POLICY_LOSSLESS, test_count_cb, (void *)&g_got, &g_buf);
    omniprof_tracing_operation_t bad[] = {7};
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, bad, 1, g_buf),
             OMNIPROF_STATUS_ERROR_OPERATION_NOT_FOUND); /* validated by the backend */
    omniprof_tracing_operation_t ok[] = {OMNIPROF_CPU_SAMPLE_CPUTIME};
    CHECK_ST(omniprof_configure_buffer_tracing_service(g_ctx, OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, ok, 1, g_buf),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_start), 0); /* started only after the lock */
    return 0;
}

SDK_TEST_TOOL(init)

static int count_op(omniprof_buffer_tracing_kind_t k, omniprof_tracing_operation_t op, void *d)
{
    (void)k; (void)op;
    (*(int *)d)++;
    return 0;
}
static omniprof_status_t on_ready_agents(omniprof_agent_version_t v, const void **agents, size_t n, void *data)
{
    (void)v;
    for (size_t i = 0; i < n; i++) {
        const omniprof_agent_v0_t *a = agents[i];
        CHECK(a->logical_index == i && a->id.handle == i + 1);
    }
    *(size_t *)data = n;
    return OMNIPROF_STATUS_SUCCESS;
}
static omniprof_status_t on_agents(omniprof_agent_version_t v, const void **agents, size_t n, void *data)
{
    (void)v;
    const omniprof_agent_v0_t *last = agents[n - 1];
    CHECK(last->type == OMNIPROF_AGENT_TYPE_GPU && strcmp(last->name, "Fake GPU") == 0);
    CHECK(last->logical_index == n - 1 && last->id.handle == n);
    *(size_t *)data = n;
    return OMNIPROF_STATUS_SUCCESS;
}
static int on_sym(const omniprof_symbol_info_t *s, void *d)
{
    (void)d;
    CHECK(strcmp(s->function, "fake_fn") == 0 && s->line == 42);
    return 0;
}
static int on_arg(uint32_t k, omniprof_tracing_operation_t op, uint32_t i, const omniprof_arg_t *a, const char *v, void *d)
{
    (void)k; (void)op; (void)i; (void)d;
    CHECK(strcmp(a->name, "frames") == 0 && strcmp(v, "3") == 0);
    return 0;
}

/* Is a library whose path contains `name` mapped into this process? */
static int mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, name) != NULL;
    if (f) fclose(f);
    return found;
}

int main(void)
{
    CHECK_ST(op_sdk_register_backend(NULL), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_ST(op_sdk_register_backend(&g_fake), OMNIPROF_STATUS_SUCCESS);
    CHECK_ST(op_sdk_register_backend(&g_fake), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT); /* duplicate name */
    CHECK_ST(op_sdk_register_backend(&g_mismatch), OMNIPROF_STATUS_ERROR_INVALID_ARGUMENT); /* manifest names "cpu" */
    CHECK(strcmp(op_sdk_backend_for_kind(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE), "cpu") == 0);
    CHECK(op_sdk_backend_for_kind(OMNIPROF_BUFFER_TRACING_MARKER_API) == NULL); /* the core's */
    /* Kinds of a backend that is not loaded: found in the manifest of its library file beside
     * the SDK, read without loading it (so CUPTI stays out of this process). */
    Dl_info info;
    CHECK(dladdr((void *)&omniprof_initialize, &info) && info.dli_fname);
    char cuda_lib[4096];
    snprintf(cuda_lib, sizeof cuda_lib, "%s", info.dli_fname);
    snprintf(strrchr(cuda_lib, '/') + 1, sizeof cuda_lib - (size_t)(strrchr(cuda_lib, '/') + 1 - cuda_lib),
             "libomniprof-backend-cuda.so");
    int have_cuda = access(cuda_lib, R_OK) == 0;
    const char *kd = op_sdk_backend_for_kind(OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH);
    CHECK(have_cuda ? kd && strcmp(kd, "cuda") == 0 : kd == NULL);
    kd = op_sdk_backend_for_kind(OMNIPROF_BUFFER_TRACING_CUDA_DRIVER_API);
    CHECK(have_cuda ? kd && strcmp(kd, "cuda") == 0 : kd == NULL);
    CHECK(!mapped("libcupti") && !mapped("libomniprof-backend-cuda"));
    CHECK_EQ_U(op_sdk_callback_kind_to_buffer_kind(OMNIPROF_CALLBACK_TRACING_MEMORY_COPY),
               OMNIPROF_BUFFER_TRACING_MEMORY_COPY);

    omniprof_initialize();
    CHECK_EQ_U(atomic_load(&g_start), 1);
    CHECK(atomic_load(&g_change) >= 1);
    int before = atomic_load(&g_change);
    omniprof_start_context(g_ctx);
    CHECK(atomic_load(&g_change) == before + 1);
    CHECK(op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, OMNIPROF_CPU_SAMPLE_CPUTIME));
    CHECK(!op_sdk_buffer_enabled(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, OMNIPROF_CPU_SAMPLE_REALTIME));
    CHECK(atomic_load(&g_change_active) == 1);
    CHECK(op_sdk_kind_active(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE) && !op_sdk_kind_active(OMNIPROF_BUFFER_TRACING_KERNEL_DISPATCH));

    /* a pause flushes the backends while collection is still on (what they hold is delivered),
     * then tells them, with the kind no longer active (the CUDA backend turns CUPTI off then); a
     * second pause does neither; a resume tells them with the kind active again */
    int fl0 = atomic_load(&g_flush), ch0 = atomic_load(&g_change);
    op_sdk_set_paused(1);
    CHECK(atomic_load(&g_flush) == fl0 + 1 && atomic_load(&g_flush_active) == 1);
    CHECK(atomic_load(&g_change) == ch0 + 1 && atomic_load(&g_change_active) == 0);
    CHECK(op_sdk_is_paused() && op_sdk_kind_active(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE));
    op_sdk_set_paused(1);
    CHECK(atomic_load(&g_flush) == fl0 + 1 && atomic_load(&g_change) == ch0 + 1);
    op_sdk_set_paused(0);
    CHECK(atomic_load(&g_change) == ch0 + 2 && atomic_load(&g_change_active) == 1);
    CHECK(!op_sdk_is_paused());
    op_sdk_set_paused(0);
    CHECK(atomic_load(&g_change) == ch0 + 2);

    /* names and iteration delegated */
    const char *n = NULL;
    CHECK_ST(omniprof_query_buffer_tracing_kind_operation_name(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, 2, &n, NULL),
             OMNIPROF_STATUS_SUCCESS);
    CHECK(n && strcmp(n, "realtime") == 0);
    CHECK_ST(omniprof_query_buffer_tracing_kind_operation_name(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, 9, &n, NULL),
             OMNIPROF_STATUS_ERROR_OPERATION_NOT_FOUND);
    int k = 0;
    CHECK_ST(omniprof_iterate_buffer_tracing_kind_operations(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, count_op, &k),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(k, OMNIPROF_CPU_SAMPLE_LAST - 1);
    CHECK_ST(omniprof_iterate_buffer_tracing_kind_operations(OMNIPROF_BUFFER_TRACING_PROCESS_SAMPLE, count_op, &k),
             OMNIPROF_STATUS_ERROR_KIND_NOT_FOUND);

    /* emit through the backend's kind; args through the backend */
    omniprof_cpu_sample_record_t s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.kind = OMNIPROF_BUFFER_TRACING_CPU_SAMPLE;
    s.operation = OMNIPROF_CPU_SAMPLE_CPUTIME;
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, OMNIPROF_CPU_SAMPLE_CPUTIME, &s, NULL);
    op_sdk_emit_from_signal(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, OMNIPROF_CPU_SAMPLE_CPUTIME, &s);
    s.operation = OMNIPROF_CPU_SAMPLE_REALTIME; /* filtered out */
    op_sdk_emit(OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, OMNIPROF_CPU_SAMPLE_REALTIME, &s, NULL);
    int flushes = atomic_load(&g_flush);
    CHECK_ST(omniprof_flush_buffer(g_buf), OMNIPROF_STATUS_SUCCESS);
    CHECK(atomic_load(&g_flush) == flushes + 1); /* backends flush before the SDK's buffers */
    CHECK_EQ_U(atomic_load(&g_got), 2);
    omniprof_record_header_t h = {.category = OMNIPROF_RECORD_CATEGORY_TRACING,
                                  .kind = OMNIPROF_BUFFER_TRACING_CPU_SAMPLE, .payload = &s};
    CHECK_ST(omniprof_iterate_buffer_tracing_record_args(&h, on_arg, NULL), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_args), 1);

    /* agents: the ready query never initializes a driver (a program that forks before its
     * first CUDA call must not find CUDA initialized), and finds the GPU once the program
     * initialized the driver itself, after the CPU agents, whose ids stay */
    size_t ncpu = 0, nready = 0, nag = 0;
    CHECK_ST(omniprof_query_ready_agents(OMNIPROF_AGENT_INFO_VERSION_0, on_ready_agents, sizeof(omniprof_agent_v0_t), &ncpu),
             OMNIPROF_STATUS_SUCCESS);
    CHECK(ncpu >= 1 && atomic_load(&g_asked_lazy) >= 1);
    CHECK_ST(omniprof_query_ready_agents(OMNIPROF_AGENT_INFO_VERSION_0, on_ready_agents, sizeof(omniprof_agent_v0_t), &nready),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(nready, ncpu); /* asked again, still not up */
    CHECK(atomic_load(&g_asked_lazy) >= 2);
    atomic_store(&g_driver_up, 1); /* the program's first call to its driver */
    CHECK_ST(omniprof_query_ready_agents(OMNIPROF_AGENT_INFO_VERSION_0, on_agents, sizeof(omniprof_agent_v0_t), &nready),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(nready, ncpu + 1);
    CHECK_EQ_U(atomic_load(&g_asked_init), 0); /* never told to initialize it */
    int asked = atomic_load(&g_asked_lazy);
    CHECK_ST(omniprof_query_available_agents(OMNIPROF_AGENT_INFO_VERSION_0, on_agents, sizeof(omniprof_agent_v0_t), &nag),
             OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(nag, ncpu + 1); /* the same list: answered once, not appended twice */
    CHECK_EQ_U(atomic_load(&g_asked_lazy), asked);
    CHECK_ST(omniprof_query_address_symbols(0x1234, on_sym, NULL), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_symbolize), 1);

    CHECK(!mapped("libcupti")); /* nothing configured a kind of the CUDA backend */
    CHECK_ST(omniprof_finalize(), OMNIPROF_STATUS_SUCCESS);
    CHECK_EQ_U(atomic_load(&g_finalize), 1);
    CHECK(op_sdk_is_finalizing());
    TEST_DONE();
}
