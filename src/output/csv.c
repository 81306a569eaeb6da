/* csv.c — the CSV sink: rocprofv3's file names and exact headers (lib/output/generateCSV.cpp).
 *
 * Files (prefix P = <dir>/<name>), each created when its first row comes:
 *   P_kernel_trace.csv            kernels
 *   P_<domain>_api_trace.csv      regions by category: CUDA_RUNTIME_API -> cuda_runtime_api_trace.csv,
 *                                 CUDA_DRIVER_API -> cuda_driver_api_trace.csv, HIP_* -> hip_api_trace.csv
 *   P_marker_api_trace.csv        marker ranges (regions) and marks (samples, Start = End)
 *   P_<domain>_trace.csv          other samples by category (e.g. cpu_sample_trace.csv), same header
 *   P_memory_copy_trace.csv       copies and memsets (Kind MEMORY_COPY / MEMORY_SET)
 *   P_memory_allocation_trace.csv allocations
 *   P_counter_collection.csv      hardware counters, one row per (dispatch, counter)
 *   P_agent_info.csv              agents of every set
 *   P_metric_trace.csv            omniprof process/system metrics and GPU PM samples (Name,Process_Id,Timestamp,Value)
 *   P_pc_sampling.csv             GPU PC samples: one row per (read, kernel, PC, stall reason)
 *   P_unified_memory_trace.csv    unified-memory migrations, page faults, thrashing
 * Headers and names are always quoted, as rocprofv3 writes them ("" doubled), bytes kept as they
 * are (invariant (3)); numbers are not. Agent columns read "Agent N" with N the agent's logical
 * index, or (rocprofv3's -A) its node id or its index among the agents of its type.
 * agent_info.csv has rocprofv3's 53 columns: node ids, type, the 46 numeric properties of
 * op_agent_props (what has no CUDA meaning is 0: docs/output.md lists them) and the names. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/sink.h"

#define HDR_API "Domain,Function,Process_Id,Thread_Id,Correlation_Id,Start_Timestamp,End_Timestamp"
#define HDR_KERNEL                                                                                        \
    "Kind,Agent_Id,Queue_Id,Stream_Id,Thread_Id,Dispatch_Id,Kernel_Id,Kernel_Name,Correlation_Id,"        \
    "Start_Timestamp,End_Timestamp,LDS_Block_Size,Scratch_Size,VGPR_Count,Accum_VGPR_Count,SGPR_Count,"   \
    "Workgroup_Size_X,Workgroup_Size_Y,Workgroup_Size_Z,Grid_Size_X,Grid_Size_Y,Grid_Size_Z"
#define HDR_COPY "Kind,Direction,Stream_Id,Source_Agent_Id,Destination_Agent_Id,Correlation_Id,Start_Timestamp,End_Timestamp"
#define HDR_ALLOC "Kind,Operation,Agent_Id,Allocation_Size,Address,Correlation_Id,Start_Timestamp,End_Timestamp"
#define HDR_PMC                                                                                           \
    "Correlation_Id,Dispatch_Id,Agent_Id,Queue_Id,Process_Id,Thread_Id,Grid_Size,Kernel_Id,Kernel_Name,"  \
    "Workgroup_Size,LDS_Block_Size,Scratch_Size,VGPR_Count,Accum_VGPR_Count,SGPR_Count,Counter_Name,"     \
    "Counter_Value,Start_Timestamp,End_Timestamp"
#define HDR_METRIC "Name,Process_Id,Timestamp,Value"
#define HDR_PC                                                                                            \
    "Agent_Id,Timestamp,Method,Correlation_Id,Dispatch_Id,Kernel_Id,Kernel_Name,Code_Object_Id,Pc_Offset," \
    "Instruction,Source_File,Source_Line,Stall_Reason,Samples,Pc_Samples"
#define HDR_UM "Kind,Operation,Source_Agent_Id,Destination_Agent_Id,Address,Bytes,Value,Cause,Start_Timestamp,End_Timestamp"

#define CSV_MAX_FILES 64

typedef struct csv_file {
    char *file; /* e.g. "kernel_trace.csv" */
    op_outfile of;
    op_buf b;
} csv_file;

typedef struct csv_sink {
    op_sink base;
    char *dir, *name;
    const op_out_ids *ids;
    csv_file files[CSV_MAX_FILES];
    int failed;     /* a file could not be opened: its status; err_text says why */
    char err_text[1024];
    int n_files;
    op_u64map cat_file; /* category id -> file index (per set) */
    char errpath[512];
    int agent_mode;       /* OP_OUT_AGENT_* */
    op_u64map agent_no;   /* logical index -> the N of "Agent N" in agent_mode (per set) */
    op_u64map type_count; /* agent type (first bytes) -> agents of it seen (per set) */
} csv_sink;

static csv_file *csv_get(csv_sink *c, const char *file, const char *header) {
    for (int i = 0; i < c->n_files; i++)
        if (!strcmp(c->files[i].file, file)) return &c->files[i];
    if (c->n_files == CSV_MAX_FILES || c->failed) return NULL;
    csv_file *cf = &c->files[c->n_files];
    memset(cf, 0, sizeof(*cf));
    if ((c->failed = op_outfile_open_derived(&cf->of, c->dir, c->name, file, c->ids, c->err_text,
                                             sizeof c->err_text)) != 0)
        return NULL;
    if (!(cf->file = strdup(file))) {
        op_outfile_close(&cf->of, 0, NULL, 0);
        snprintf(c->err_text, sizeof c->err_text, "out of memory");
        c->failed = OP_OUT_EFAIL;
        return NULL;
    }
    c->n_files++;
    for (const char *h = header, *comma; *h; h = *comma ? comma + 1 : comma) { /* each name quoted */
        comma = strchr(h, ',');
        if (!comma) comma = h + strlen(h);
        op_buf_printf(&cf->b, "%s\"%.*s\"", h == header ? "" : ",", (int)(comma - h), h);
    }
    op_buf_putc(&cf->b, '\n');
    return cf;
}

/* agent_info.csv's header: Node_Id, Logical_Node_Id, Agent_Type, op_agent_props, the names. */
static const char *agent_header(void) {
    static char hdr[1400];
    if (!hdr[0]) {
        size_t at = (size_t)snprintf(hdr, sizeof hdr, "Node_Id,Logical_Node_Id,Agent_Type");
        for (int i = 0; i < OP_AGENT_PROPS && at < sizeof hdr; i++)
            at += (size_t)snprintf(hdr + at, sizeof hdr - at, ",%s", op_agent_props[i].csv);
        if (at < sizeof hdr) snprintf(hdr + at, sizeof hdr - at, ",Name,Vendor_Name,Product_Name,Model_Name");
    }
    return hdr;
}

static int csv_flush(csv_sink *c, csv_file *cf) {
    if (cf->b.len >= (1u << 18) || cf->b.oom) {
        if (op_buf_write(&cf->b, cf->of.f) != 0) {
            snprintf(c->errpath, sizeof c->errpath, "%s", cf->file);
            return -1;
        }
    }
    return 0;
}

/* idx: the agent's logical index, mapped to the numbering asked for. */
static void put_agent_no(const csv_sink *c, op_buf *b, int64_t idx) {
    uint64_t n = (uint64_t)idx;
    if (idx >= 0 && c->agent_mode != OP_OUT_AGENT_RELATIVE) op_u64map_get(&c->agent_no, (uint64_t)idx, &n);
    if (idx < 0) op_buf_puts(b, "\"\"");
    else op_buf_printf(b, "\"Agent %lld\"", (long long)n);
}
#define put_agent(b, idx) put_agent_no(c, (b), (idx))

int op_output_parse_agent_index(const char *text) {
    if (!text || !strcmp(text, "relative")) return OP_OUT_AGENT_RELATIVE;
    if (!strcmp(text, "absolute")) return OP_OUT_AGENT_ABSOLUTE;
    if (!strcmp(text, "type-relative")) return OP_OUT_AGENT_TYPE_RELATIVE;
    return -1;
}

/* The agent's number in agent_mode (agents come in id order). */
static void remember_agent(csv_sink *c, const op_agent_info *a) {
    uint64_t type = 0, seen = 0;
    if (a->type) memcpy(&type, a->type, strnlen((const char *)a->type, sizeof type));
    op_u64map_get(&c->type_count, type, &seen);
    op_u64map_put(&c->type_count, type, seen + 1);
    uint64_t n = c->agent_mode == OP_OUT_AGENT_ABSOLUTE ? (uint64_t)a->absolute_index : seen;
    op_u64map_put(&c->agent_no, (uint64_t)a->logical_index, n);
}

static int csv_agent_row(const op_agent_info *a, void *arg) {
    csv_sink *c = arg;
    remember_agent(c, a);
    csv_file *cf = csv_get(c, "agent_info.csv", agent_header());
    if (!cf) return 1;
    op_buf *b = &cf->b;
    op_buf_printf(b, "%lld,%lld,", (long long)a->absolute_index, (long long)a->logical_index);
    op_buf_puts(b, a->type && !strcmp((const char *)a->type, "GPU") ? "\"GPU\"" : "\"CPU\"");
    for (int i = 0; i < OP_AGENT_PROPS; i++) op_buf_printf(b, ",%lld", (long long)a->prop[i]);
    for (int i = 0; i < 4; i++) {
        op_buf_putc(b, ',');
        const unsigned char *s = a->text[i];
        op_buf_csv_str(b, s ? s : (const unsigned char *)"", s ? (size_t)a->text_len[i] : 0, 1);
    }
    op_buf_putc(b, '\n');
    return csv_flush(c, cf) ? 1 : 0;
}

static int csv_begin_set(op_sink *k, op_src *src, op_src_set *set, uint32_t set_index, char *err, size_t errlen) {
    csv_sink *c = (csv_sink *)k;
    (void)set_index;
    int rc = op_rd_agents(src, set, csv_agent_row, c, err, errlen);
    if (c->failed) {
        op_seterr(err, errlen, "%s", c->err_text);
        return c->failed;
    }
    if (c->errpath[0]) {
        op_seterr(err, errlen, "%s: cannot write: %s", c->errpath, strerror(errno));
        return OP_OUT_EFAIL;
    }
    return rc;
}

static csv_file *file_for_category(csv_sink *c, const op_ev *ev) {
    uint64_t v;
    if (op_u64map_get(&c->cat_file, (uint64_t)ev->category_id, &v)) return &c->files[v];
    char dom[200], file[240];
    char cat[160];
    snprintf(cat, sizeof cat, "%.*s", ev->category ? ev->category_len : 0, ev->category ? (const char *)ev->category : "");
    op_domain_file(cat[0] ? cat : "UNKNOWN_API", dom, sizeof dom);
    snprintf(file, sizeof file, "%s_trace.csv", dom);
    csv_file *cf = csv_get(c, file, HDR_API);
    if (cf) op_u64map_put(&c->cat_file, (uint64_t)ev->category_id, (uint64_t)(cf - c->files));
    return cf;
}

static int csv_event(op_sink *k, const op_ev *ev, char *err, size_t errlen) {
    csv_sink *c = (csv_sink *)k;
    csv_file *cf = NULL;
    static const unsigned char empty[] = "";
#define STR(p, n) ((p) ? (p) : empty), ((p) ? (size_t)(n) : 0)
    switch (ev->kind) {
    case EV_REGION:
    case EV_SAMPLE: {
        if (!(cf = file_for_category(c, ev))) break;
        op_buf *b = &cf->b;
        op_buf_csv_str(b, STR(ev->category, ev->category_len), 1);
        op_buf_putc(b, ',');
        op_buf_csv_str(b, STR(ev->name, ev->name_len), 1);
        op_buf_printf(b, ",%lld,%lld,%lld,%lld,%lld\n", (long long)ev->pid, (long long)ev->tid, (long long)ev->corr,
                      (long long)ev->start, (long long)ev->end);
        break;
    }
    case EV_KERNEL: {
        if (!(cf = csv_get(c, "kernel_trace.csv", HDR_KERNEL))) break;
        op_buf *b = &cf->b;
        op_buf_puts(b, "\"KERNEL_DISPATCH\",");
        put_agent(b, ev->agent_index);
        op_buf_printf(b, ",%lld,%lld,%lld,%lld,%lld,", (long long)ev->queue_id, (long long)ev->stream_id, (long long)ev->tid,
                      (long long)ev->dispatch_id, (long long)ev->kernel_id);
        op_buf_csv_str(b, STR(ev->name, ev->name_len), 1);
        op_buf_printf(b, ",%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n", (long long)ev->corr,
                      (long long)ev->start, (long long)ev->end, (long long)ev->lds, (long long)ev->scratch,
                      (long long)ev->vgpr, (long long)ev->accum_vgpr, (long long)ev->sgpr, (long long)ev->block[0],
                      (long long)ev->block[1], (long long)ev->block[2], (long long)ev->grid[0], (long long)ev->grid[1],
                      (long long)ev->grid[2]);
        break;
    }
    case EV_COPY: {
        if (!(cf = csv_get(c, "memory_copy_trace.csv", HDR_COPY))) break;
        op_buf *b = &cf->b;
        int is_set = ev->name && ev->name_len == 10 && !memcmp(ev->name, "MEMORY_SET", 10);
        op_buf_puts(b, is_set ? "\"MEMORY_SET\"," : "\"MEMORY_COPY\",");
        op_buf_csv_str(b, STR(ev->name, ev->name_len), 1);
        op_buf_printf(b, ",%lld,", (long long)ev->stream_id);
        put_agent(b, ev->src_agent_index);
        op_buf_putc(b, ',');
        put_agent(b, ev->dst_agent_index);
        op_buf_printf(b, ",%lld,%lld,%lld\n", (long long)ev->corr, (long long)ev->start, (long long)ev->end);
        break;
    }
    case EV_ALLOC: {
        if (!(cf = csv_get(c, "memory_allocation_trace.csv", HDR_ALLOC))) break;
        op_buf *b = &cf->b;
        op_buf_printf(b, "\"MEMORY_ALLOCATION\",\"MEMORY_ALLOCATION_%s\",",
                      ev->alloc_type && !strcmp(ev->alloc_type, "FREE") ? "FREE"
                      : ev->alloc_type && !strcmp(ev->alloc_type, "REALLOC") ? "REALLOCATE"
                      : ev->alloc_type && !strcmp(ev->alloc_type, "RECLAIM") ? "RECLAIM" : "ALLOCATE");
        put_agent(b, ev->agent_index);
        op_buf_printf(b, ",%lld,0x%llx,%lld,%lld,%lld\n", (long long)ev->size, (unsigned long long)ev->address,
                      (long long)ev->corr, (long long)ev->start, (long long)ev->end);
        break;
    }
    case EV_PMC: {
        if (!(cf = csv_get(c, "counter_collection.csv", HDR_PMC))) break;
        op_buf *b = &cf->b;
        op_buf_printf(b, "%lld,%lld,", (long long)ev->corr, (long long)ev->dispatch_id);
        put_agent(b, ev->agent_index);
        op_buf_printf(b, ",%lld,%lld,%lld,%lld,%lld,", (long long)ev->queue_id, (long long)ev->pid, (long long)ev->tid,
                      (long long)ev->grid[0], (long long)ev->kernel_id);
        op_buf_csv_str(b, STR(ev->category, ev->category_len), 1);
        op_buf_printf(b, ",%lld,%lld,%lld,%lld,%lld,%lld,", (long long)ev->block[0], (long long)ev->lds,
                      (long long)ev->scratch, (long long)ev->vgpr, (long long)ev->accum_vgpr, (long long)ev->sgpr);
        op_buf_csv_str(b, STR(ev->name, ev->name_len), 1);
        char d[40];
        op_buf_printf(b, ",%s,%lld,%lld\n", op_fmt_double(d, sizeof d, ev->value), (long long)ev->start, (long long)ev->end);
        break;
    }
    case EV_METRIC: {
        if (!(cf = csv_get(c, "metric_trace.csv", HDR_METRIC))) break;
        op_buf *b = &cf->b;
        op_buf_csv_str(b, STR(ev->name, ev->name_len), 1);
        char d[40];
        op_buf_printf(b, ",%lld,%lld,%s\n", (long long)ev->pid, (long long)ev->start, op_fmt_double(d, sizeof d, ev->value));
        break;
    }
    case EV_PC: {
        if (!(cf = csv_get(c, "pc_sampling.csv", HDR_PC))) break;
        op_buf *b = &cf->b;
        put_agent(b, ev->agent_index);
        op_buf_printf(b, ",%lld,\"%s\",%lld,%lld,%lld,", (long long)ev->start,
                      ev->method == 2 ? "CONTINUOUS" : "KERNEL_SERIALIZED", (long long)ev->corr,
                      (long long)ev->dispatch_id, (long long)ev->kernel_id);
        op_buf_csv_str(b, STR(ev->name, ev->name_len), 1);
        op_buf_printf(b, ",%lld,0x%llx,", (long long)ev->code_object, (unsigned long long)ev->pc_offset);
        op_buf_csv_str(b, STR(ev->instruction, ev->instruction_len), 1);
        op_buf_putc(b, ',');
        op_buf_csv_str(b, STR(ev->file, ev->file_len), 1);
        op_buf_printf(b, ",%lld,", (long long)ev->line);
        op_buf_csv_str(b, STR(ev->category, ev->category_len), 1);
        op_buf_printf(b, ",%lld,%lld\n", (long long)ev->count, (long long)ev->pc_samples);
        break;
    }
    case EV_UM: {
        if (!(cf = csv_get(c, "unified_memory_trace.csv", HDR_UM))) break;
        op_buf *b = &cf->b;
        op_buf_puts(b, "\"UNIFIED_MEMORY\",");
        op_buf_csv_str(b, STR(ev->name, ev->name_len), 1);
        op_buf_putc(b, ',');
        put_agent(b, ev->src_agent_index);
        op_buf_putc(b, ',');
        put_agent(b, ev->dst_agent_index);
        op_buf_printf(b, ",0x%llx,%lld,%lld,", (unsigned long long)ev->address, (long long)ev->size, (long long)ev->count);
        op_buf_csv_str(b, STR(ev->category, ev->category_len), 1);
        op_buf_printf(b, ",%lld,%lld\n", (long long)ev->start, (long long)ev->end);
        break;
    }
    default:
        return 0;
    }
#undef STR
    if (!cf && c->failed) {
        op_seterr(err, errlen, "%s", c->err_text);
        return c->failed;
    }
    if (!cf || csv_flush(c, cf)) {
        op_seterr(err, errlen, "%s: cannot write: %s", c->errpath[0] ? c->errpath : "csv", strerror(errno));
        return OP_OUT_EFAIL;
    }
    return 0;
}

static int csv_end_set(op_sink *k, char *err, size_t errlen) {
    csv_sink *c = (csv_sink *)k;
    (void)err;
    (void)errlen;
    op_u64map_free(&c->cat_file);
    op_u64map_free(&c->agent_no);
    op_u64map_free(&c->type_count);
    return 0;
}

static int csv_finish(op_sink *k, int ok, char *err, size_t errlen) {
    csv_sink *c = (csv_sink *)k;
    csv_end_set(k, err, errlen);
    int rc = 0;
    for (int i = 0; i < c->n_files; i++) {
        csv_file *cf = &c->files[i];
        int keep = ok && !rc;
        if (keep && (op_buf_write(&cf->b, cf->of.f) != 0 || fflush(cf->of.f) != 0 || ferror(cf->of.f))) {
            op_seterr(err, errlen, "%s: cannot write: %s", cf->of.final, strerror(errno));
            rc = OP_OUT_EFAIL;
            keep = 0;
        }
        if (op_outfile_close(&cf->of, keep, err, errlen) && keep) rc = OP_OUT_EFAIL;
        op_buf_free(&cf->b);
        free(cf->file);
    }
    free(c->dir);
    free(c->name);
    free(c);
    return rc;
}

op_sink *op_sink_csv(const char *dir, const char *name, const op_out_ids *ids, int agent_index) {
    csv_sink *c = calloc(1, sizeof(*c));
    if (!c) return NULL;
    c->agent_mode = agent_index;
    c->dir = strdup(dir ? dir : ".");
    c->name = strdup(name ? name : "");
    c->ids = ids;
    if (!c->dir || !c->name) {
        free(c->dir);
        free(c->name);
        free(c);
        return NULL;
    }
    c->base.name = "csv";
    c->base.text = (1 << EV_KINDS) - 1;
    c->base.begin_set = csv_begin_set;
    c->base.event = csv_event;
    c->base.end_set = csv_end_set;
    c->base.finish = csv_finish;
    return &c->base;
}
