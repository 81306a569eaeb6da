/* db_files.h — how the writer's database files appear (whole) and stay the profiler's own fds
 * (db_files.c). Internal to src/db. */
#ifndef OMNIPROF_DB_FILES_H
#define OMNIPROF_DB_FILES_H

/* Install the guards over SQLite's unix VFS system calls (once; idempotent). */
void op_db_files_install(void);

/* +1/-1: the calling thread runs the writer's SQLite, so the files SQLite opens in it are
 * adopted as the profiler's (common/fd_guard.h). */
void op_db_files_scope(int delta);

/* Make the database `path` appear whole: `img` (a complete SQLite image, `size` bytes, e.g.
 * from sqlite3_serialize) is written to an unnamed file in path's directory and linked under
 * `path`. Never replaces: EEXIST when the name exists. 0 or an errno value; `err` names the
 * path and the cause. */
int op_db_files_publish(const char *path, const void *img, size_t size, char *err, size_t errlen);

#endif /* OMNIPROF_DB_FILES_H */
