/* test_schema.c — db.schema: op_db_schema_create makes rocpd schema version 3 (uuid-suffixed
 * tables, plain-named views, every data/summary/omniprof view answering a SELECT with the
 * rocpd column lists), rejects bad uuids, rolls back on failure, and the views SQL can be
 * re-created as TEMP views over attached databases; the generated table list (tables_gen.h, from
 * tables.sql) matches what SQLite made, and every TABLE of kinds.def names one of its tables. */
#include "db_test.h"

#include "common/kinds.h"
#include "db/tables_gen.h"

static int count_objects(sqlite3 *db, const char *type)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM sqlite_master WHERE type='%s'", type);
    return (int)q_i64(db, sql);
}

/* Every view answers SELECT * ... LIMIT 1; returns the number of views. */
static int select_every_view(sqlite3 *db, const char *schema)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT name FROM %s WHERE type='view' ORDER BY name", schema);
    sqlite3_stmt *s;
    CHECK(sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK);
    int n = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        char q[256];
        snprintf(q, sizeof q, "SELECT * FROM \"%s\" LIMIT 1", (const char *)sqlite3_column_text(s, 0));
        sqlite3_stmt *v = NULL;
        int rc = sqlite3_prepare_v2(db, q, -1, &v, NULL);
        if (rc == SQLITE_OK) rc = sqlite3_step(v);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW) fprintf(stderr, "view %s: %s\n", sqlite3_column_text(s, 0), sqlite3_errmsg(db));
        CHECK(rc == SQLITE_DONE || rc == SQLITE_ROW);
        sqlite3_finalize(v);
        n++;
    }
    sqlite3_finalize(s);
    return n;
}

/* Is `name` one of the schema's tables (op_db_schema_table_names)? */
static int table_known(const char *name)
{
    for (const char *const *t = op_db_schema_table_names(); *t; t++)
        if (!strcmp(*t, name)) return 1;
    return 0;
}

static void check_columns(sqlite3 *db, const char *view, const char *expected)
{
    char q[256], got[4096] = "";
    snprintf(q, sizeof q, "SELECT * FROM \"%s\" LIMIT 0", view);
    sqlite3_stmt *s = NULL;
    CHECK(sqlite3_prepare_v2(db, q, -1, &s, NULL) == SQLITE_OK);
    for (int i = 0; s && i < sqlite3_column_count(s); i++) {
        strcat(got, i ? "," : "");
        strcat(got, sqlite3_column_name(s, i));
    }
    sqlite3_finalize(s);
    if (strcmp(got, expected) != 0) fprintf(stderr, "columns of %s:\n got %s\nwant %s\n", view, got, expected);
    CHECK(strcmp(got, expected) == 0);
}

int main(void)
{
    char dir[512], path[600], err[512];
    test_tmpdir(dir, sizeof dir, "schema");
    snprintf(path, sizeof path, "%s/a.db", dir);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);

    /* bad arguments */
    CHECK(op_db_schema_create(NULL, NULL, err, sizeof err) == -EINVAL);
    CHECK(op_db_schema_create(db, "01234567-zz", err, sizeof err) == -EINVAL);
    CHECK(strstr(err, "invalid uuid '01234567-zz'") != NULL);
    CHECK(count_objects(db, "table") == 0);

    const char *uuid = "0195b6a1-2c3d-7e4f-8a9b-0123456789ab";
    CHECK(op_db_schema_create(db, uuid, err, sizeof err) == 0);
    CHECK_EQ_STR(q_text(db, "SELECT value FROM rocpd_metadata WHERE tag='schema_version'"), "3");
    CHECK_EQ_STR(q_text(db, "SELECT value FROM rocpd_metadata WHERE tag='uuid'"), "_0195b6a1_2c3d_7e4f_8a9b_0123456789ab");
    CHECK_EQ_STR(q_text(db, "SELECT value FROM rocpd_metadata WHERE tag='guid'"), uuid);
    /* physical tables carry the suffix; rocpd's importer rule (strip uuid) gives the base names;
     * the counts are the generator's (tables_gen.h, from tables.sql), the tables SQLite's */
    CHECK_EQ_INT(q_i64(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name LIKE "
                           "'rocpd_%_0195b6a1_2c3d_7e4f_8a9b_0123456789ab'"), OP_DB_N_ROCPD_TABLES);
    CHECK_EQ_INT(q_i64(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name LIKE "
                           "'omniprof_%_0195b6a1_2c3d_7e4f_8a9b_0123456789ab'"), OP_DB_N_OMNIPROF_TABLES);
    CHECK_EQ_INT(q_i64(db, "SELECT count(*) FROM sqlite_master WHERE type='table'"), OP_DB_N_TABLES);
    CHECK(OP_DB_N_ROCPD_TABLES == 20); /* rocpd schema version 3 has 20 tables, all ours */
    int ntables = 0;
    for (const char *const *t = op_db_schema_table_names(); *t; t++) {
        char q[256];
        snprintf(q, sizeof q, "SELECT count(*) FROM sqlite_master WHERE type='view' AND name='%s'", *t);
        CHECK_EQ_INT(q_i64(db, q), 1);
        snprintf(q, sizeof q, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='%s%s'", *t,
                 "_0195b6a1_2c3d_7e4f_8a9b_0123456789ab");
        CHECK_EQ_INT(q_i64(db, q), 1);
        ntables++;
    }
    CHECK_EQ_INT(ntables, OP_DB_N_TABLES);
    /* kinds.def's TABLE column (and the writer's internal kinds'): each names a table of the
     * schema ("" only where a kind stores nothing) */
    int nkinds = 0;
    for (uint32_t cat = OMNIPROF_RECORD_CATEGORY_TRACING; cat <= OMNIPROF_RECORD_CATEGORY_COUNTERS; cat++) {
        for (uint32_t k = 1; k < 64; k++) {
            const op_kind_info *ki = op_kind_info_get(cat, k);
            if (!ki) continue;
            nkinds++;
            if (!ki->table[0]) {
                CHECK(cat == OMNIPROF_RECORD_CATEGORY_TRACING && k == OMNIPROF_BUFFER_TRACING_CORRELATION_ID_RETIREMENT);
                continue;
            }
            if (!table_known(ki->table)) fprintf(stderr, "kinds.def: %s: no table %s\n", ki->name, ki->table);
            CHECK(table_known(ki->table));
        }
    }
    CHECK_EQ_INT(nkinds, OMNIPROF_BUFFER_TRACING_LAST - 1 + OMNIPROF_COUNTER_RECORD_LAST - 1);
    static const struct { const char *name, *table; } internal[] = {
#define OP_DB_INTERNAL_KIND(VALUE, NAME, PAYLOAD, LAYOUT, CORRELATION, STRINGS, INGEST, TABLE, BUFFER, \
                            SWITCH)                                                              \
    {#NAME, TABLE},
#include "db/ingest_kinds.def"
    };
    for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++) {
        if (!table_known(internal[i].table)) fprintf(stderr, "ingest_kinds.def: %s: no table %s\n", internal[i].name,
                                                     internal[i].table);
        CHECK(table_known(internal[i].table));
    }
    /* guid default on every row */
    CHECK(sqlite3_exec(db, "INSERT INTO rocpd_string_0195b6a1_2c3d_7e4f_8a9b_0123456789ab (string) VALUES ('x')", 0, 0, 0) == SQLITE_OK);
    CHECK_EQ_STR(q_text(db, "SELECT guid FROM rocpd_string WHERE string='x'"), uuid);
    /* the UNIQUE string constraint interns */
    CHECK(sqlite3_exec(db, "INSERT INTO rocpd_string_0195b6a1_2c3d_7e4f_8a9b_0123456789ab (string) VALUES ('x')", 0, 0, 0) != SQLITE_OK);

    int nviews = select_every_view(db, "sqlite_master");
    CHECK(nviews >= 28 + 26);
    static const char *data_views[] = {"regions", "region_args", "samples", "sample_regions", "regions_and_samples",
                                       "kernels", "memory_copies", "memory_allocations", "scratch_memory", "pmc_info",
                                       "pmc_events", "counters_collection", "processes", "threads", "code_objects",
                                       "kernel_symbols", "top_kernels", "top", "busy", "events_args", "stream_args",
                                       "omniprof_cpu_samples", "omniprof_stack_frames", "omniprof_metrics",
                                       "omniprof_threads", "omniprof_memory_sets", NULL};
    for (const char *const *v = data_views; *v; v++) {
        char q[256];
        snprintf(q, sizeof q, "SELECT count(*) FROM sqlite_master WHERE type='view' AND name='%s'", *v);
        if (q_i64(db, q) != 1) fprintf(stderr, "missing view %s\n", *v);
        CHECK_EQ_INT(q_i64(db, q), 1);
    }
    check_columns(db, "regions", "id,guid,category,name,nid,pid,tid,start,end,duration,event_id,stack_id,parent_stack_id,corr_id,extdata,call_stack,line_info");
    check_columns(db, "samples", "id,guid,category,name,nid,pid,tid,timestamp,event_id,stack_id,parent_stack_id,corr_id,extdata,call_stack,line_info");
    check_columns(db, "kernels", "id,guid,tid,category,region,name,nid,pid,agent_abs_index,agent_log_index,agent_type_index,agent_type,code_object_id,kernel_id,dispatch_id,stream_id,queue_id,queue,stream,start,end,duration,grid_x,grid_y,grid_z,workgroup_x,workgroup_y,workgroup_z,lds_size,scratch_size,vgpr_count,accum_vgpr_count,sgpr_count,static_lds_size,static_scratch_size,stack_id,parent_stack_id,corr_id,agent_id");
    check_columns(db, "top_kernels", "name,total_calls,total_duration,average,percentage");
    check_columns(db, "top", "name,total_calls,total_duration,average,percentage");
    check_columns(db, "busy", "agent_id,type,GpuTime,WallTime,Busy");
    check_columns(db, "pmc_events", "id,guid,pmc_id,event_id,category,name,nid,pid,dispatch_id,start,end,duration,counter_name,counter_value");
    check_columns(db, "processes", "nid,machine_id,system_name,hostname,system_release,system_version,guid,ppid,pid,init,start,end,fini,command");
    check_columns(db, "threads", "nid,machine_id,system_name,hostname,system_release,system_version,guid,ppid,pid,tid,start,end,name");
    CHECK(strstr(op_db_schema_views_sql(), "CREATE VIEW IF NOT EXISTS \"regions\"") != NULL);

    /* creating it twice fails cleanly (metadata rows would double): the transaction rolls back */
    long long meta = q_i64(db, "SELECT count(*) FROM rocpd_metadata");
    CHECK(op_db_schema_create(db, "0195b6a1-0000-7000-8000-000000000000", err, sizeof err) == 0 ||
          q_i64(db, "SELECT count(*) FROM rocpd_metadata") == meta);
    sqlite3_close(db);

    /* TEMP views over an attached database (what the output module does over unions) */
    sqlite3 *mem = NULL;
    CHECK(sqlite3_open(":memory:", &mem) == SQLITE_OK);
    char attach[700];
    snprintf(attach, sizeof attach, "ATTACH DATABASE '%s' AS db0", path);
    CHECK(sqlite3_exec(mem, attach, 0, 0, 0) == SQLITE_OK);
    for (const char *const *t = op_db_schema_table_names(); *t; t++) {
        char q[512];
        snprintf(q, sizeof q, "CREATE TEMP VIEW \"%s\" AS SELECT * FROM db0.\"%s_0195b6a1_2c3d_7e4f_8a9b_0123456789ab\"", *t, *t);
        CHECK(sqlite3_exec(mem, q, 0, 0, 0) == SQLITE_OK);
    }
    CHECK(op_db_schema_create_views(mem, 1, err, sizeof err) == 0);
    CHECK_EQ_INT(q_i64(mem, "SELECT count(*) FROM sqlite_temp_master WHERE type='view' AND name='kernels'"), 1);
    CHECK(select_every_view(mem, "sqlite_temp_master") >= 54);
    sqlite3_close(mem);

    char uuid_buf[40];
    CHECK(op_db_make_uuid(uuid_buf, sizeof uuid_buf) == 0);
    CHECK(strlen(uuid_buf) == 36 && uuid_buf[14] == '7' && uuid_buf[8] == '-');
    CHECK(op_db_make_uuid(uuid_buf, 10) == -EINVAL);
    test_rmtree(dir);
    return CHECK_DONE();
}
