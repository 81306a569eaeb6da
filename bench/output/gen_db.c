/* gen_db.c — writes a synthetic omniprof database of any size through the real schema
 * (op_db_schema_create), for the output tests and benchmarks.
 *
 * usage: omniprof-gen-db OUT.db [--events N] [--threads T] [--streams S] [--pid P] [--seed K]
 *                        [--weird] [--start NS] [--rank R]
 *
 * Each thread runs iterations of: a CUDA runtime API region (correlation id c) that launches a
 * kernel on stream c % S (same correlation id); every 8th iteration a cudaMemcpyAsync and its
 * copy, every 16th a cudaMemsetAsync and its memset (a MEMORY_SET copy row), every 32nd a
 * cudaMalloc with an allocation row, every 64th a driver API call; marker ranges enclose
 * 16 iterations, a mark (sample on the thread's MARKER track) every 32nd; CPU call-stack samples
 * (sample on the CPU_SAMPLE track) every 4th; a metric value every 128th; a hardware counter
 * value on every 16th kernel. Ids follow the writer's conventions (docs/database.md): the process
 * row's id is the pid, a thread row's id its tid, one queue per stream, memsets have their device
 * as both agents, marker ranges carry their text as extdata "message". --weird adds names with quotes, commas, newlines, non-UTF-8 bytes
 * and a 10 KB template kernel name. Timestamps are disjoint and nested as a real run's are.
 *
 * The last line printed is the exact row counts: "regions=R samples=S kernels=K copies=C
 * allocs=A metrics=M pmc=P markers=X" (markers = marker regions + marks). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "db/db.h"

static sqlite3 *g_db;
static char g_suffix[80];
static long long g_pid;

static void die(const char *what) {
    fprintf(stderr, "gen_db: %s: %s\n", what, sqlite3_errmsg(g_db));
    exit(1);
}

static sqlite3_stmt *prep(const char *fmt) {
    char sql[2048];
    /* fmt holds %1$s for the suffix (possibly several times), %2$lld for the process row id */
    snprintf(sql, sizeof sql, fmt, g_suffix, g_pid);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(g_db, sql, -1, &st, NULL) != SQLITE_OK) die(sql);
    return st;
}

static void run(sqlite3_stmt *st) {
    if (sqlite3_step(st) != SQLITE_DONE) die("insert");
    sqlite3_reset(st);
}

static sqlite3_stmt *s_str;
static int64_t n_strings;
static int64_t str_id(const char *s, int len) {
    /* small linear cache: the generator uses few distinct strings */
    static struct { char *s; int len; int64_t id; } cache[256];
    static int n;
    if (len < 0) len = (int)strlen(s);
    for (int i = 0; i < n; i++)
        if (cache[i].len == len && !memcmp(cache[i].s, s, (size_t)len)) return cache[i].id;
    int64_t id = ++n_strings;
    sqlite3_bind_int64(s_str, 1, id);
    sqlite3_bind_text(s_str, 2, s, len, SQLITE_TRANSIENT);
    run(s_str);
    if (n < 256) {
        cache[n].s = malloc((size_t)len);
        memcpy(cache[n].s, s, (size_t)len);
        cache[n].len = len;
        cache[n].id = id;
        n++;
    }
    return id;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUT.db [--events N] [--threads T] [--streams S] [--pid P] [--seed K] [--weird] [--start NS] [--rank R]\n", argv[0]);
        return 2;
    }
    const char *out = argv[1];
    int64_t events = 10000, pid = 4242, start = 1000000000LL, rank = -1;
    int threads = 3, streams = 4, weird = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--events") && i + 1 < argc) events = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--streams") && i + 1 < argc) streams = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pid") && i + 1 < argc) pid = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) rng_state += (uint64_t)atoll(argv[++i]) * 0x9E3779B97F4A7C15ull;
        else if (!strcmp(argv[i], "--start") && i + 1 < argc) start = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--rank") && i + 1 < argc) rank = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--weird")) weird = 1;
        else {
            fprintf(stderr, "gen_db: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (threads < 1) threads = 1;
    g_pid = pid;
#define TID(t) ((int64_t)(pid + (t))) /* thread row id = OS tid */
    if (streams < 1) streams = 1;
    remove(out);
    if (sqlite3_open(out, &g_db) != SQLITE_OK) die(out);
    sqlite3_exec(g_db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16384;", 0, 0, 0);
    char uuid[40], err[512];
    op_db_make_uuid(uuid, sizeof uuid);
    if (op_db_schema_create(g_db, uuid, err, sizeof err)) {
        fprintf(stderr, "gen_db: schema: %s\n", err);
        return 1;
    }
    g_suffix[0] = '_';
    for (size_t i = 0; i <= strlen(uuid); i++) g_suffix[i + 1] = uuid[i] == '-' ? '_' : uuid[i];
    sqlite3_exec(g_db, "BEGIN", 0, 0, 0);
    s_str = prep("INSERT INTO \"rocpd_string%1$s\" (id, string) VALUES (?1, ?2)");

    /* identity */
    char sql[1024];
    snprintf(sql, sizeof sql, "INSERT INTO \"rocpd_info_node%s\" (id, hash, machine_id, hostname, system_name) VALUES (1, 7, 'machine-gen', 'gen-host', 'Linux')", g_suffix);
    if (sqlite3_exec(g_db, sql, 0, 0, 0)) die(sql);
    snprintf(sql, sizeof sql,
             "INSERT INTO \"rocpd_info_process%s\" (id, nid, ppid, pid, init, start, command, extdata) VALUES (%lld, 1, 1, %lld, %lld, %lld, 'gen_app --synthetic', '%s')",
             g_suffix, (long long)pid, (long long)pid, (long long)start, (long long)start, rank >= 0 ? "{\"rank\":RANK}" : "{}");
    if (rank >= 0) {
        char tmp[1024];
        char *p = strstr(sql, "RANK");
        snprintf(tmp, sizeof tmp, "%.*s%lld%s", (int)(p - sql), sql, (long long)rank, p + 4);
        strcpy(sql, tmp);
    }
    if (sqlite3_exec(g_db, sql, 0, 0, 0)) die(sql);
    for (int t = 0; t < threads; t++) {
        snprintf(sql, sizeof sql, "INSERT INTO \"rocpd_info_thread%s\" (id, nid, ppid, pid, tid, name) VALUES (%lld, 1, 1, %lld, %lld, 'worker-%d')",
                 g_suffix, (long long)TID(t), (long long)pid, (long long)TID(t), t);
        if (sqlite3_exec(g_db, sql, 0, 0, 0)) die(sql);
    }
    snprintf(sql, sizeof sql,
             "INSERT INTO \"rocpd_info_agent%1$s\" (id, nid, pid, type, absolute_index, logical_index, type_index, name, vendor_name, product_name, model_name) VALUES "
             "(1, 1, %2$lld, 'CPU', 0, 0, 0, 'cpu0', 'GenuineIntel', 'Synthetic CPU', 'x86'), "
             "(2, 1, %2$lld, 'GPU', 1, 1, 0, 'gpu0', 'NVIDIA', 'Synthetic GPU', 'sm_90')",
             g_suffix, (long long)pid);
    if (sqlite3_exec(g_db, sql, 0, 0, 0)) die(sql);
    for (int s = 0; s < streams; s++) {
        snprintf(sql, sizeof sql, "INSERT INTO \"rocpd_info_stream%s\" (id, nid, pid, name) VALUES (%d, 1, %lld, 'stream %d')", g_suffix, s + 1, (long long)pid, s + 1);
        if (sqlite3_exec(g_db, sql, 0, 0, 0)) die(sql);
        snprintf(sql, sizeof sql, "INSERT INTO \"rocpd_info_queue%s\" (id, nid, pid, name, extdata) VALUES (%d, 1, %lld, 'stream %d', '{\"stream_id\":%d,\"agent_id\":2}')",
                 g_suffix, s + 1, (long long)pid, s + 1, s + 1);
        if (sqlite3_exec(g_db, sql, 0, 0, 0)) die(sql);
    }
    snprintf(sql, sizeof sql, "INSERT INTO \"rocpd_info_pmc%s\" (id, nid, pid, agent_id, target_arch, name, symbol) VALUES (1, 1, %lld, 2, 'GPU', 'sm__cycles_elapsed.sum', 'cycles')", g_suffix, (long long)pid);
    if (sqlite3_exec(g_db, sql, 0, 0, 0)) die(sql);

    /* kernels */
    static const char *const knames[] = {"vector_add(float*, float const*, int)", "gemm_kernel<float, 128>", "reduce_sum", "softmax_fwd"};
    int nk = 4;
    int64_t kname_id[8]; /* rocpd_string id of each kernel's name: its dispatches' region_name_id */
    sqlite3_stmt *s_ks = prep("INSERT INTO \"rocpd_info_kernel_symbol%1$s\" (id, nid, pid, kernel_name, display_name, group_segment_size, private_segment_size, sgpr_count, arch_vgpr_count, accum_vgpr_count) VALUES (?1, 1, %2$lld, ?2, ?2, 1024, 0, 16, 32, 0)");
    for (int k = 0; k < nk; k++) {
        sqlite3_bind_int(s_ks, 1, k + 1);
        sqlite3_bind_text(s_ks, 2, knames[k], -1, SQLITE_STATIC);
        run(s_ks);
        kname_id[k] = str_id(knames[k], -1);
    }
    if (weird) {
        /* 10 KB template name */
        size_t L = 10240;
        char *big = malloc(L + 64);
        strcpy(big, "templated_kernel<");
        size_t p = strlen(big);
        while (p < L) {
            const char *part = "std::vector<std::pair<int, \"q\">>, ";
            size_t n = strlen(part);
            memcpy(big + p, part, n);
            p += n;
        }
        strcpy(big + p, "end>");
        sqlite3_bind_int(s_ks, 1, nk + 1);
        sqlite3_bind_text(s_ks, 2, big, -1, SQLITE_TRANSIENT);
        run(s_ks);
        kname_id[nk] = str_id(big, -1);
        /* non-UTF-8 bytes and quotes */
        static const char bad[] = "k_\xff\xfe_bytes_\"quoted\",comma\nnewline";
        sqlite3_bind_int(s_ks, 1, nk + 2);
        sqlite3_bind_text(s_ks, 2, bad, (int)sizeof bad - 1, SQLITE_STATIC);
        run(s_ks);
        kname_id[nk + 1] = str_id(bad, (int)sizeof bad - 1);
        free(big);
        nk += 2;
    }

    int64_t c_rt = str_id("CUDA_RUNTIME_API", -1), c_drv = str_id("CUDA_DRIVER_API", -1);
    int64_t c_kd = str_id("KERNEL_DISPATCH", -1), c_mc = str_id("MEMORY_COPY", -1);
    int64_t c_ma = str_id("MEMORY_ALLOCATION", -1), c_mk = str_id("MARKER_CORE_API", -1);
    int64_t c_cpu = str_id("CPU_SAMPLE", -1);
    int64_t n_launch = str_id("cudaLaunchKernel", -1), n_memcpy = str_id("cudaMemcpyAsync", -1);
    int64_t n_memset = str_id("cudaMemsetAsync", -1), n_malloc = str_id("cudaMalloc", -1);
    int64_t n_drv = str_id("cuCtxSynchronize", -1);
    int64_t n_h2d = str_id("MEMORY_COPY_HOST_TO_DEVICE", -1), n_set = str_id("MEMORY_SET", -1);
    int64_t n_rss = str_id("process.rss_bytes", -1);
    const char *range_text[3] = {"step", weird ? "phase \"one\", \xc3\xa9t\xe9" : "phase one", "iteration"};
    int64_t n_range[3];
    char range_ext[3][96]; /* {"message": text}, as the writer stores a range's text */
    for (int i = 0; i < 3; i++) {
        n_range[i] = str_id(range_text[i], -1);
        char *o = range_ext[i] + sprintf(range_ext[i], "{\"message\":\"");
        for (const char *c = range_text[i]; *c; c++) {
            if (*c == '"' || *c == '\\') *o++ = '\\';
            *o++ = *c;
        }
        strcpy(o, "\"}");
    }

    /* tracks: per thread MARKER_CORE_API and CPU_SAMPLE; one metric track */
    sqlite3_stmt *s_tr = prep("INSERT INTO \"rocpd_track%1$s\" (id, nid, pid, tid, name_id, extdata) VALUES (?1, 1, %2$lld, ?2, ?3, ?4)");
    for (int t = 0; t < threads; t++) {
        sqlite3_bind_int(s_tr, 1, 2 * t + 1);
        sqlite3_bind_int64(s_tr, 2, TID(t));
        sqlite3_bind_int64(s_tr, 3, c_mk);
        sqlite3_bind_text(s_tr, 4, "{}", -1, SQLITE_STATIC);
        run(s_tr);
        sqlite3_bind_int(s_tr, 1, 2 * t + 2);
        sqlite3_bind_int64(s_tr, 2, TID(t));
        sqlite3_bind_int64(s_tr, 3, c_cpu);
        run(s_tr);
    }
    int metric_track = 2 * threads + 1;
    sqlite3_bind_int(s_tr, 1, metric_track);
    sqlite3_bind_int(s_tr, 2, 1);
    sqlite3_bind_int64(s_tr, 3, n_rss);
    sqlite3_bind_text(s_tr, 4, "{\"units\":\"bytes\",\"source\":\"process_sample\"}", -1, SQLITE_STATIC);
    run(s_tr);

    sqlite3_stmt *s_ev = prep("INSERT INTO \"rocpd_event%1$s\" (id, category_id, stack_id, correlation_id, extdata) VALUES (?1, ?2, ?3, 0, ?4)");
    sqlite3_stmt *s_rg = prep("INSERT INTO \"rocpd_region%1$s\" (id, nid, pid, tid, start, \"end\", name_id, event_id) VALUES (?1, 1, %2$lld, ?2, ?3, ?4, ?5, ?6)");
    sqlite3_stmt *s_sm = prep("INSERT INTO \"rocpd_sample%1$s\" (id, track_id, timestamp, event_id) VALUES (?1, ?2, ?3, ?4)");
    sqlite3_stmt *s_kd = prep("INSERT INTO \"rocpd_kernel_dispatch%1$s\" (id, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, \"end\", "
                              "private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id, region_name_id) "
                              "VALUES (?1, 1, %2$lld, ?2, 2, ?3, ?1, ?4, ?4, ?5, ?6, 0, 1024, 256, 1, 1, ?7, 1, 1, ?8, ?9)");
    sqlite3_stmt *s_mc = prep("INSERT INTO \"rocpd_memory_copy%1$s\" (id, nid, pid, tid, start, \"end\", name_id, dst_agent_id, src_agent_id, size, stream_id, event_id, queue_id) "
                              "VALUES (?1, 1, %2$lld, ?2, ?3, ?4, ?5, 2, ?6, ?7, ?8, ?9, ?8)");
    sqlite3_stmt *s_ma = prep("INSERT INTO \"rocpd_memory_allocate%1$s\" (id, nid, pid, tid, agent_id, type, level, start, \"end\", address, size, event_id) "
                              "VALUES (?1, 1, %2$lld, ?2, 2, ?3, 'REAL', ?4, ?5, ?6, ?7, ?8)");
    sqlite3_stmt *s_mt = prep("INSERT INTO \"omniprof_metric%1$s\" (id, track_id, timestamp, value) VALUES (?1, ?2, ?3, ?4)");
    sqlite3_stmt *s_pe = prep("INSERT INTO \"rocpd_pmc_event%1$s\" (id, event_id, pmc_id, value) VALUES (?1, ?2, 1, ?3)");

    int64_t n_ev = 0, n_rg = 0, n_sm = 0, n_kd = 0, n_mc = 0, n_ma = 0, n_mt = 0, n_pe = 0, n_markers = 0;
    int64_t corr = 0, total = 0;
    int64_t *tcur = calloc((size_t)threads, sizeof(int64_t));
    int64_t *scur = calloc((size_t)streams, sizeof(int64_t));
    int64_t *range_start = calloc((size_t)threads, sizeof(int64_t));
    int64_t *iter = calloc((size_t)threads, sizeof(int64_t));
    for (int t = 0; t < threads; t++) tcur[t] = start + t * 137;
    for (int s = 0; s < streams; s++) scur[s] = start;
#define EVENT(cat, stack, ext)                                     \
    do {                                                           \
        sqlite3_bind_int64(s_ev, 1, ++n_ev);                       \
        sqlite3_bind_int64(s_ev, 2, cat);                          \
        sqlite3_bind_int64(s_ev, 3, stack);                        \
        sqlite3_bind_text(s_ev, 4, ext, -1, SQLITE_TRANSIENT);     \
        run(s_ev);                                                 \
    } while (0)
    while (total < events) {
        int t = (int)(rnd() % (uint64_t)threads);
        int64_t it = iter[t]++;
        int64_t now = tcur[t];
        /* marker range around 16 iterations: open at it%16==0, close at it%16==15 */
        if (it % 16 == 0) range_start[t] = now, now += 50;
        /* CPU sample every 4th */
        if (it % 4 == 0) {
            EVENT(c_cpu, 0, "{}");
            sqlite3_bind_int64(s_sm, 1, ++n_sm);
            sqlite3_bind_int(s_sm, 2, 2 * t + 2);
            sqlite3_bind_int64(s_sm, 3, now + 5);
            sqlite3_bind_int64(s_sm, 4, n_ev);
            run(s_sm);
            total++;
        }
        /* the API call and what it launches */
        int64_t api_name = n_launch, d = 2000 + (int64_t)(rnd() % 3000);
        int what = 0; /* 0 kernel, 1 copy, 2 memset, 3 malloc, 4 driver */
        if (it % 64 == 63) what = 4, api_name = n_drv;
        else if (it % 32 == 31) what = 3, api_name = n_malloc;
        else if (it % 16 == 15) what = 2, api_name = n_memset;
        else if (it % 8 == 7) what = 1, api_name = n_memcpy;
        ++corr;
        EVENT(what == 4 ? c_drv : c_rt, corr, "{}");
        sqlite3_bind_int64(s_rg, 1, ++n_rg);
        sqlite3_bind_int64(s_rg, 2, TID(t));
        sqlite3_bind_int64(s_rg, 3, now + 10);
        sqlite3_bind_int64(s_rg, 4, now + 10 + d);
        sqlite3_bind_int64(s_rg, 5, api_name);
        sqlite3_bind_int64(s_rg, 6, n_ev);
        run(s_rg);
        total++;
        int s = (int)(corr % streams);
        int64_t gstart = (now + 10 + d / 2 > scur[s] ? now + 10 + d / 2 : scur[s]) + 100;
        int64_t gdur = 5000 + (int64_t)(rnd() % 20000);
        if (what == 0) {
            EVENT(c_kd, corr, "{}");
            int k = (int)(rnd() % (uint64_t)nk);
            sqlite3_bind_int64(s_kd, 1, ++n_kd);
            sqlite3_bind_int64(s_kd, 2, TID(t));
            sqlite3_bind_int(s_kd, 3, k + 1);
            sqlite3_bind_int(s_kd, 4, s + 1);
            sqlite3_bind_int64(s_kd, 5, gstart);
            sqlite3_bind_int64(s_kd, 6, gstart + gdur);
            sqlite3_bind_int64(s_kd, 7, 256 * (1 + (int64_t)(rnd() % 64)));
            sqlite3_bind_int64(s_kd, 8, n_ev);
            sqlite3_bind_int64(s_kd, 9, kname_id[k]);
            run(s_kd);
            scur[s] = gstart + gdur;
            total++;
            if (n_kd % 16 == 0) {
                sqlite3_bind_int64(s_pe, 1, ++n_pe);
                sqlite3_bind_int64(s_pe, 2, n_ev);
                sqlite3_bind_double(s_pe, 3, (double)(gdur * 2));
                run(s_pe);
                total++;
            }
        } else if (what == 1 || what == 2) {
            EVENT(c_mc, corr, "{}");
            sqlite3_bind_int64(s_mc, 1, ++n_mc);
            sqlite3_bind_int64(s_mc, 2, TID(t));
            sqlite3_bind_int64(s_mc, 3, gstart);
            sqlite3_bind_int64(s_mc, 4, gstart + gdur);
            sqlite3_bind_int64(s_mc, 5, what == 1 ? n_h2d : n_set);
            sqlite3_bind_int(s_mc, 6, what == 1 ? 1 : 2); /* a memset's source is its device */
            sqlite3_bind_int64(s_mc, 7, 4096 * (1 + (int64_t)(rnd() % 256)));
            sqlite3_bind_int(s_mc, 8, s + 1);
            sqlite3_bind_int64(s_mc, 9, n_ev);
            run(s_mc);
            scur[s] = gstart + gdur;
            total++;
        } else if (what == 3) {
            EVENT(c_ma, corr, "{}");
            sqlite3_bind_int64(s_ma, 1, ++n_ma);
            sqlite3_bind_int64(s_ma, 2, TID(t));
            sqlite3_bind_text(s_ma, 3, (n_ma % 2) ? "ALLOC" : "FREE", -1, SQLITE_STATIC);
            sqlite3_bind_int64(s_ma, 4, now + 20);
            sqlite3_bind_int64(s_ma, 5, now + 10 + d - 10);
            sqlite3_bind_int64(s_ma, 6, 0x7f0000000000LL + n_ma * 4096);
            sqlite3_bind_int64(s_ma, 7, 1 << 20);
            sqlite3_bind_int64(s_ma, 8, n_ev);
            run(s_ma);
            total++;
        }
        now += 10 + d + 200;
        /* mark every 32nd */
        if (it % 32 == 5) {
            char ext[200];
            snprintf(ext, sizeof ext, "{\"message\":\"%s %lld\"}", weird ? "mark \\\"q\\\"," : "mark", (long long)it);
            EVENT(c_mk, 0, ext);
            sqlite3_bind_int64(s_sm, 1, ++n_sm);
            sqlite3_bind_int(s_sm, 2, 2 * t + 1);
            sqlite3_bind_int64(s_sm, 3, now);
            sqlite3_bind_int64(s_sm, 4, n_ev);
            run(s_sm);
            n_markers++;
            total++;
            now += 20;
        }
        if (it % 16 == 15) {
            EVENT(c_mk, 0, range_ext[(it / 16) % 3]);
            sqlite3_bind_int64(s_rg, 1, ++n_rg);
            sqlite3_bind_int64(s_rg, 2, TID(t));
            sqlite3_bind_int64(s_rg, 3, range_start[t]);
            sqlite3_bind_int64(s_rg, 4, now);
            sqlite3_bind_int64(s_rg, 5, n_range[(it / 16) % 3]);
            sqlite3_bind_int64(s_rg, 6, n_ev);
            run(s_rg);
            n_markers++;
            total++;
            now += 50;
        }
        if (it % 128 == 0 && t == 0) {
            sqlite3_bind_int64(s_mt, 1, ++n_mt);
            sqlite3_bind_int(s_mt, 2, metric_track);
            sqlite3_bind_int64(s_mt, 3, now);
            sqlite3_bind_double(s_mt, 4, 1e8 + (double)(rnd() % 1000000));
            run(s_mt);
            total++;
        }
        tcur[t] = now;
    }
    /* close open marker ranges so every range is complete */
    for (int t = 0; t < threads; t++) {
        if (iter[t] % 16 == 0) continue;
        EVENT(c_mk, 0, range_ext[0]);
        sqlite3_bind_int64(s_rg, 1, ++n_rg);
        sqlite3_bind_int64(s_rg, 2, TID(t));
        sqlite3_bind_int64(s_rg, 3, range_start[t]);
        sqlite3_bind_int64(s_rg, 4, tcur[t] + 10);
        sqlite3_bind_int64(s_rg, 5, n_range[0]);
        sqlite3_bind_int64(s_rg, 6, n_ev);
        run(s_rg);
        n_markers++;
    }
    sqlite3_stmt *all[] = {s_str, s_ks, s_tr, s_ev, s_rg, s_sm, s_kd, s_mc, s_ma, s_mt, s_pe};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sqlite3_finalize(all[i]);
    if (sqlite3_exec(g_db, "COMMIT", 0, 0, 0)) die("commit");
    if (sqlite3_close(g_db) != SQLITE_OK) die("close");
    printf("regions=%lld samples=%lld kernels=%lld copies=%lld allocs=%lld metrics=%lld pmc=%lld markers=%lld\n",
           (long long)n_rg, (long long)n_sm, (long long)n_kd, (long long)n_mc, (long long)n_ma, (long long)n_mt,
           (long long)n_pe, (long long)n_markers);
    free(tcur);
    free(scur);
    free(range_start);
    free(iter);
    return 0;
}
