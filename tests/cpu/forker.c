/* forker.c — the parent spins in parent_work, forks, the child spins in child_work and exits 3;
 * the parent waits and prints the child's status. Exit 0 when the child exited with 3. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define BODY(n)                                                \
    volatile double x = 0;                                     \
    for (long i = 0; i < (n); i++) x += (double)i * 0.5;       \
    return x

__attribute__((noinline)) double parent_work(long n) { BODY(n); }
__attribute__((noinline)) double child_work(long n) { BODY(n); }

int main(void)
{
    parent_work(60000000L);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        child_work(120000000L);
        _exit(3);
    }
    parent_work(60000000L);
    int st = 0;
    waitpid(pid, &st, 0);
    printf("child exit=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return WIFEXITED(st) && WEXITSTATUS(st) == 3 ? 0 : 1;
}
