/* which_lib.c — prints, for each libc/pthread name in argv (or a default list), the file of the
 * definition this process binds it to (dlsym(RTLD_DEFAULT) then dladdr), one "NAME FILE" line
 * each, FILE the base name. preload.layout runs it under the launcher to see which of
 * omniprof's libraries interpose what in each kind of run. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void *nothing(void *arg) { return arg; }

int main(int argc, char **argv)
{
    /* one lock and one join, for the run that records lock calls */
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    pthread_t th;
    if (pthread_create(&th, NULL, nothing, NULL) == 0) pthread_join(th, NULL);
    static const char *const names[] = {"write", "read", "poll", "nanosleep", "pthread_mutex_lock",
                                        "pthread_mutex_unlock", "pthread_cond_wait", "pthread_join",
                                        "pthread_barrier_wait", "__libc_start_main", "setitimer",
                                        "pthread_setname_np", "pthread_create", "close", "fork", NULL};
    const char *const *list = argc > 1 ? (const char *const *)argv + 1 : names;
    for (; *list; list++) {
        void *p = dlsym(RTLD_DEFAULT, *list);
        Dl_info info;
        const char *file = p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "none";
        const char *base = strrchr(file, '/');
        printf("%s %s\n", *list, base ? base + 1 : file);
    }
    return 0;
}
