/* db_files.h — how the writer's database files appear (whole) and stay the profiler's own fds
 * (db_files.c). Internal to src/db. */
#ifndef OMNIPROF_DB_FILES_H
#define OMNIPROF_DB_FILES_H

#include <stddef.h>
#include <stdint.h>

/* Install the guards over SQLite's unix VFS system calls (once; idempotent). */
void op_db_files_install(void);

/* How many times one of the writer's fds (database, WAL, shared memory, spool) was found closed
 * or replaced behind the interposers (a raw close_range, a static program): the writers that
 * met one are off (W5); the tool then opens a new database (src/tool/tool.c). */
uint64_t op_db_files_replaced(void);
void op_db_files_note_replaced(void);

/* 0 when every database file the writers hold is still theirs, else -1 (and counted as
 * above): checked before each transaction, so that SQLite is never asked to lock a file the
 * program put on one of its numbers (its lock retries would stall the writer for seconds). */
int op_db_files_check(void);

/* +1/-1: the calling thread runs the writer's SQLite, so the files SQLite opens in it are
 * adopted as the profiler's (common/fd_guard.h). */
void op_db_files_scope(int delta);

/* Make the database `path` appear whole: `img` (a complete SQLite image, `size` bytes, e.g.
 * from sqlite3_serialize) is written to an unnamed file in path's directory and linked under
 * `path`. Never replaces: EEXIST when the name exists. 0 or an errno value; `err` names the
 * path and the cause. */
int op_db_files_publish(const char *path, const void *img, size_t size, char *err, size_t errlen);

#endif /* OMNIPROF_DB_FILES_H */
