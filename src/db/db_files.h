/* db_files.h — the writer's SQLite files are the profiler's own fds (db_files.c). Internal to
 * src/db. */
#ifndef OMNIPROF_DB_FILES_H
#define OMNIPROF_DB_FILES_H

/* Install the guards over SQLite's unix VFS system calls (once; idempotent). */
void op_db_files_install(void);

/* +1/-1: the calling thread runs the writer's SQLite, so the files SQLite opens in it are
 * adopted as the profiler's (common/fd_guard.h). */
void op_db_files_scope(int delta);

#endif /* OMNIPROF_DB_FILES_H */
