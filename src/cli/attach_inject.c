/* attach_inject.c — load a shared library into a running process (op_attach_inject), the way a
 * debugger's `call dlopen(...)` does, but such that the target never depends on us afterwards.
 *
 * What a debugger does: stop a thread, save its registers, point it at dlopen with a fake
 * return address, let it run until it returns there, restore the registers. If the debugger
 * dies in between, the thread returns into nowhere and the process crashes. Here the thread's
 * way back is in the target itself: a signal frame.
 *
 *   1. PTRACE_SEIZE one thread and PTRACE_INTERRUPT it (no other thread is stopped).
 *   2. Check it is at a safe point: not inside the dynamic loader (dlopen would re-enter it);
 *      not running C-library code outside a system call (it could hold the malloc lock that
 *      dlopen needs); for the first ~1 s not in a system call that the kernel would restart
 *      through restart_syscall (nanosleep, poll: the restart block does not survive a signal
 *      frame), after that such a sleep is taken and made again from the start after the call
 *      (a program that sleeps between short bursts is almost never anywhere else).
 *      Otherwise let it go and try again a little later (up to ~3 s, threads in turn).
 *   3. Build on its stack, below the red zone, a kernel signal frame (struct rt_sigframe of
 *      x86-64: ucontext with all general registers, the signal mask from PTRACE_GETSIGMASK,
 *      and the extended FPU/AVX state from PTRACE_GETREGSET NT_X86_XSTATE, 64-byte aligned,
 *      with its FP_XSTATE_MAGIC2 trailer) holding the thread's state as it was, and above it the
 *      library path. A thread stopped in a restartable system call gets the restart the kernel
 *      would have done: rip back over the 2-byte `syscall`, rax = the system call number.
 *      uc_stack carries an invalid ss_flags so that rt_sigreturn leaves the sigaltstack alone.
 *   4. Set rip = dlopen, rdi = path, rsi = RTLD_NOW|RTLD_GLOBAL, rsp = the frame, whose return
 *      address is a `mov $15,%rax; syscall` sequence (rt_sigreturn) found in the target's
 *      executable mappings (glibc's and musl's __restore_rt are exactly that), and orig_rax = -1
 *      (no restart of the interrupted call now). PTRACE_DETACH.
 *   5. The thread runs dlopen, "returns" into rt_sigreturn, and the kernel restores every
 *      register, the FPU state and the signal mask from the frame: it continues where it was.
 * From step 4 on nothing depends on omniprof: killed at any point, the target still completes
 * the call and resumes. Before step 4 the thread was only stopped, and a tracer's death
 * detaches it (the kernel resumes a tracee when its tracer exits). Signals arriving during the
 * call are delivered to the program's handlers as usual, on top of the frame.
 *
 * Limits (docs/instrument.md): x86-64 only (aarch64 would need its own frame: fpsimd/SVE
 * records, and the vDSO's __kernel_rt_sigreturn as return address); the interrupted thread may
 * see EINTR from a system call that Linux never restarts (epoll_wait, sigtimedwait, ...), as
 * under any debugger's attach; glibc >= 2.34 (dlopen in libc) or older with __libc_dlopen_mode. */
#include "cli/attach_inject.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <sys/user.h>

#include "elf/ins_functions.h"

#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516
#define XSTATE_MAX (64 * 1024)

typedef struct range {
    uint64_t lo, hi;
} range;

typedef struct target {
    pid_t pid;
    uint64_t dlopen_addr;
    int dlopen_is_private; /* __libc_dlopen_mode: needs __RTLD_DLOPEN */
    uint64_t sigreturn_addr;
    range ld[8], libc[8];
    int n_ld, n_libc;
    /* threads seen in a sleep that the kernel restarts through restart_syscall: the call's number
     * and where and with what it was made, so that once restart_syscall (219) stands in its place
     * the same call can be made again (check_point) */
    struct {
        pid_t tid;
        long long nr;
        uint64_t rip, rdi, rsi, rdx, r10;
    } sleeps[64];
    int n_sleeps;
} target;

/* Kernel layouts (arch/x86/include/uapi/asm/sigcontext.h, ucontext.h) written out here so
 * that glibc's differently sized ucontext_t is never mixed in. */
typedef struct k_sigcontext {
    uint64_t r8, r9, r10, r11, r12, r13, r14, r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
    uint16_t cs, gs, fs, ss;
    uint64_t err, trapno, oldmask, cr2, fpstate, reserved1[8];
} k_sigcontext;

typedef struct k_ucontext {
    uint64_t uc_flags;
    uint64_t uc_link;
    uint64_t ss_sp;
    int32_t ss_flags, pad;
    uint64_t ss_size;
    k_sigcontext mc;
    uint64_t sigmask;
} k_ucontext;

#define K_UC_FP_XSTATE 0x1
#define K_UC_SIGCONTEXT_SS 0x2
#define K_FP_XSTATE_MAGIC2 0x46505845u

static const char *base_of(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* /proc/PID/maps: the loader's and libc's executable ranges, libc's path and load bias. */
static int read_maps(target *t, char *libc_path, size_t n, uint64_t *libc_bias, char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)t->pid);
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    char line[4096 + 256];
    libc_path[0] = '\0';
    *libc_bias = 0;
    bool bias_set = false;
    int lines = 0;
    errno = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        unsigned long long lo, hi, off;
        char perms[8] = "";
        int pos = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s%n", &lo, &hi, perms, &off, &pos) < 4) continue;
        char *file = line + pos;
        while (*file == ' ') file++;
        file[strcspn(file, "\n")] = '\0';
        if (*file != '/') continue;
        const char *b = base_of(file);
        bool is_ld = !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-musl", 7);
        bool is_libc = !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5);
        /* the loaded image's first segment is read-only; a writable private mapping of the
         * file at offset 0 is somebody reading it (libelf in the process), not the image */
        if (is_libc && off == 0 && !bias_set && perms[1] != 'w') {
            snprintf(libc_path, n, "%s", file);
            *libc_bias = lo;
            bias_set = true;
        }
        if (perms[2] != 'x') continue;
        if (is_ld && t->n_ld < 8) t->ld[t->n_ld++] = (range){lo, hi};
        if (is_libc && t->n_libc < 8) t->libc[t->n_libc++] = (range){lo, hi};
    }
    int read_errno = ferror(f) ? errno : 0;
    fclose(f);
    /* Another user's process without CAP_SYS_PTRACE: the file opens but reads as empty (or
     * fails with EACCES/EPERM): a refusal, not a program without a C library. */
    if (lines == 0) {
        errno = read_errno == EPERM ? EPERM : EACCES;
        snprintf(err, errlen, "cannot read %s", path);
        return -1;
    }
    if (!libc_path[0]) {
        errno = 0;
        snprintf(err, errlen, "process %d has no C library mapped (a static program cannot load a library)", (int)t->pid);
        return -1;
    }
    return 0;
}

static bool in_ranges(const range *r, int n, uint64_t a)
{
    for (int i = 0; i < n; i++)
        if (a >= r[i].lo && a < r[i].hi) return true;
    return false;
}

/* dlopen's address in the target (its libc file, read through /proc/PID/root). */
static int find_dlopen(target *t, const char *libc_path, uint64_t bias, char *err, size_t errlen)
{
    char file[4200];
    snprintf(file, sizeof file, "/proc/%d/root%s", (int)t->pid, libc_path);
    op_ins_module m;
    if (op_ins_module_read(file, false, &m, err, errlen) != 0) return -1;
    uint64_t dl = 0, priv = 0;
    for (size_t i = 0; i < m.n_fns; i++) {
        if (!m.fns[i].exported) continue;
        if (!strcmp(m.fns[i].name, "dlopen")) dl = m.fns[i].vaddr;
        else if (!strcmp(m.fns[i].name, "__libc_dlopen_mode")) priv = m.fns[i].vaddr;
    }
    op_ins_module_free(&m);
    if (!dl && !priv) {
        errno = 0;
        snprintf(err, errlen, "the C library of process %d (%s) exports neither dlopen nor __libc_dlopen_mode",
                 (int)t->pid, libc_path);
        return -1;
    }
    t->dlopen_addr = bias + (dl ? dl : priv);
    t->dlopen_is_private = dl == 0;
    return 0;
}

/* A `mov $15,%rax; syscall` (48 c7 c0 0f 00 00 00 0f 05) in the target's libc code. */
static int find_sigreturn(target *t, char *err, size_t errlen)
{
    static const uint8_t pat[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)t->pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    uint8_t *buf = malloc(1 << 20);
    for (int r = 0; buf && r < t->n_libc && !t->sigreturn_addr; r++) {
        for (uint64_t a = t->libc[r].lo; a < t->libc[r].hi && !t->sigreturn_addr;) {
            size_t want = (size_t)(t->libc[r].hi - a < (1 << 20) ? t->libc[r].hi - a : (1 << 20));
            ssize_t got = pread(fd, buf, want, (off_t)a);
            if (got < (ssize_t)sizeof pat) break;
            for (ssize_t i = 0; i + (ssize_t)sizeof pat <= got; i++)
                if (buf[i] == 0x48 && !memcmp(buf + i, pat, sizeof pat)) {
                    t->sigreturn_addr = a + (uint64_t)i;
                    break;
                }
            a += (uint64_t)got - sizeof pat + 1;
        }
    }
    free(buf);
    close(fd);
    if (!t->sigreturn_addr) {
        snprintf(err, errlen, "no rt_sigreturn sequence found in the C library of process %d", (int)t->pid);
        return -1;
    }
    return 0;
}

/* Threads of the process, running ones first. */
static int list_threads(pid_t pid, pid_t *out, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    int n = 0;
    pid_t sleeping[256];
    int ns = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        pid_t tid = (pid_t)atoi(e->d_name);
        char st[128], buf[512] = "";
        snprintf(st, sizeof st, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
        FILE *f = fopen(st, "re");
        if (f) {
            if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
            fclose(f);
        }
        const char *rp = strrchr(buf, ')');
        char state = rp && rp[1] == ' ' ? rp[2] : '?';
        if (state == 'R' && n < max) out[n++] = tid;
        else if (ns < 256) sleeping[ns++] = tid;
    }
    if (d) closedir(d);
    for (int i = 0; i < ns && n < max; i++) out[n++] = sleeping[i];
    return n;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Wait for the interrupt stop; a signal-delivery stop first is passed on (and interrupted
 * again). Returns 0 when stopped, -1 if the thread is gone. */
static int wait_stop(pid_t tid)
{
    for (int i = 0; i < 64; i++) {
        int st;
        pid_t r = waitpid(tid, &st, __WALL);
        if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st)) return -1;
        if (!WIFSTOPPED(st)) continue;
        if ((st >> 16) == PTRACE_EVENT_STOP) return 0;
        /* a signal for the program: deliver it, then interrupt again */
        ptrace(PTRACE_CONT, tid, 0, (void *)(uintptr_t)WSTOPSIG(st));
        ptrace(PTRACE_INTERRUPT, tid, 0, 0);
    }
    return -1;
}

typedef enum safety { SAFE, RETRY, BAD } safety;

/* *restart_nr: -1 when the thread goes on as it was after the injected call; else the system call
 * it makes (again) then, with its own arguments (rip back over the `syscall`): the interrupted
 * call, as the kernel restarts it when no handler runs.
 * A sleep the kernel restarts through restart_syscall (nanosleep, clock_nanosleep, poll, a timed
 * futex wait: -ERESTART_RESTARTBLOCK) keeps its state in the kernel's per-thread restart block,
 * which rt_sigreturn clears. Such a thread is taken only when `late` (no other safe point for
 * ~1 s: a program that sleeps between short bursts), and then the call is made again from the
 * start: the thread sleeps at most its interval once more and never sees EINTR. Where
 * restart_syscall already stands in its place (an earlier try of ours interrupted it), the call
 * is known only if that try recorded it, with the same pc and arguments. */
static safety check_point(target *t, pid_t tid, const struct user_regs_struct *r, bool late, long long *restart_nr)
{
    *restart_nr = -1;
    if (in_ranges(t->ld, t->n_ld, r->rip)) return RETRY;
    long long orig = (long long)r->orig_rax, rax = (long long)r->rax;
    if (orig >= 0) {
        if (rax == -ERESTART_RESTARTBLOCK) {
            int k = 0;
            while (k < t->n_sleeps && t->sleeps[k].tid != tid) k++;
            if (orig != 219 /* restart_syscall */) { /* the call itself: remember it */
                if (k == t->n_sleeps && k < 64) t->n_sleeps++;
                if (k < 64) {
                    t->sleeps[k].tid = tid, t->sleeps[k].nr = orig, t->sleeps[k].rip = r->rip;
                    t->sleeps[k].rdi = r->rdi, t->sleeps[k].rsi = r->rsi, t->sleeps[k].rdx = r->rdx;
                    t->sleeps[k].r10 = r->r10;
                }
                *restart_nr = orig;
            } else if (k < t->n_sleeps && t->sleeps[k].rip == r->rip && t->sleeps[k].rdi == r->rdi &&
                       t->sleeps[k].rsi == r->rsi && t->sleeps[k].rdx == r->rdx && t->sleeps[k].r10 == r->r10) {
                *restart_nr = t->sleeps[k].nr;
            } else {
                return RETRY; /* which call restart_syscall continues is not known */
            }
            return late ? SAFE : RETRY;
        }
        /* malloc's own system calls (made with an arena locked): dlopen would wait for it */
        if (orig == 9 || orig == 10 || orig == 11 || orig == 12 || orig == 25 || orig == 28) return RETRY;
        if (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR || rax == -ERESTARTNOHAND) *restart_nr = orig;
        return SAFE; /* in (or returning from) a system call: the C library holds no lock of ours */
    }
    return in_ranges(t->libc, t->n_libc, r->rip) ? RETRY : SAFE;
}

static int write_mem(pid_t pid, uint64_t addr, const void *buf, size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t w = pwrite(fd, buf, n, (off_t)addr);
    close(fd);
    return w == (ssize_t)n ? 0 : -1;
}

/* Steps 3-4 on a stopped thread at a safe point. Returns 0, or -1 (nothing was changed). */
static int redirect(const target *t, pid_t tid, const struct user_regs_struct *regs, long long restart_nr,
                    const char *lib)
{
    uint8_t *xs = aligned_alloc(64, XSTATE_MAX);
    if (!xs) return -1;
    memset(xs, 0, XSTATE_MAX);
    struct iovec iov = {xs, XSTATE_MAX - 64};
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) != 0 || iov.iov_len < 512 + 64) {
        free(xs);
        return -1;
    }
    uint32_t xstate_size = (uint32_t)iov.iov_len;
    uint32_t magic1, sw_size;
    memcpy(&magic1, xs + 464, 4);
    memcpy(&sw_size, xs + 464 + 12, 4); /* _fpx_sw_bytes.xstate_size */
    if (magic1 == 0x46505853u && sw_size >= 512 && sw_size <= xstate_size) xstate_size = sw_size;
    uint32_t magic2 = K_FP_XSTATE_MAGIC2;
    memcpy(xs + xstate_size, &magic2, 4);
    uint64_t sigmask = 0;
    if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof sigmask, &sigmask) != 0) {
        free(xs);
        return -1;
    }
    size_t path_len = strlen(lib) + 1;
    /* layout, downwards from rsp - 128 (red zone): path, xstate (64-aligned), ucontext, retaddr */
    uint64_t top = (regs->rsp - 128) & ~(uint64_t)15;
    uint64_t path_at = (top - path_len) & ~(uint64_t)15;
    uint64_t xs_at = (path_at - (xstate_size + 4)) & ~(uint64_t)63;
    uint64_t uc_at = (xs_at - sizeof(k_ucontext) - 128 /* siginfo room */) & ~(uint64_t)15;
    uint64_t sp = uc_at - 8; /* the return address; sp % 16 == 8 as at any function entry */
    k_ucontext uc;
    memset(&uc, 0, sizeof uc);
    uc.uc_flags = K_UC_FP_XSTATE | K_UC_SIGCONTEXT_SS;
    uc.ss_flags = 4; /* invalid: rt_sigreturn then leaves the sigaltstack as it is */
    k_sigcontext *mc = &uc.mc;
    mc->r8 = regs->r8, mc->r9 = regs->r9, mc->r10 = regs->r10, mc->r11 = regs->r11;
    mc->r12 = regs->r12, mc->r13 = regs->r13, mc->r14 = regs->r14, mc->r15 = regs->r15;
    mc->rdi = regs->rdi, mc->rsi = regs->rsi, mc->rbp = regs->rbp, mc->rbx = regs->rbx;
    mc->rdx = regs->rdx, mc->rax = regs->rax, mc->rcx = regs->rcx, mc->rsp = regs->rsp;
    mc->rip = regs->rip, mc->eflags = regs->eflags;
    mc->cs = (uint16_t)regs->cs, mc->gs = 0, mc->fs = 0, mc->ss = (uint16_t)regs->ss;
    if (restart_nr >= 0) { /* what the kernel does for a restartable call when no handler runs */
        mc->rip = regs->rip - 2;
        mc->rax = (unsigned long long)restart_nr;
    }
    mc->fpstate = xs_at;
    uc.sigmask = sigmask;
    if (write_mem(t->pid, path_at, lib, path_len) != 0 || write_mem(t->pid, xs_at, xs, xstate_size + 4) != 0 ||
        write_mem(t->pid, uc_at, &uc, sizeof uc) != 0 ||
        write_mem(t->pid, sp, &t->sigreturn_addr, sizeof t->sigreturn_addr) != 0) {
        free(xs);
        return -1;
    }
    free(xs);
    struct user_regs_struct call = *regs;
    call.rip = t->dlopen_addr;
    call.rdi = path_at;
    call.rsi = 0x102 /* RTLD_NOW | RTLD_GLOBAL */ | (t->dlopen_is_private ? 0x80000000u : 0);
    call.rsp = sp;
    call.rax = 0;
    call.orig_rax = (unsigned long long)-1;
    call.eflags &= ~(1ull << 10 | 1ull << 8); /* DF, TF */
    return ptrace(PTRACE_SETREGS, tid, 0, &call) == 0 ? 0 : -1;
}

static op_inject_status refused(pid_t pid, int e, char *err, size_t errlen)
{
    char why[512] = "";
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    int scope = -1;
    if (f) {
        if (fscanf(f, "%d", &scope) != 1) scope = -1;
        fclose(f);
    }
    char status[64], line[256];
    snprintf(status, sizeof status, "/proc/%d/status", (int)pid);
    long uid = -1;
    f = fopen(status, "re");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Uid:", 4)) uid = strtol(line + 4, NULL, 10);
    if (f) fclose(f);
    if (uid >= 0 && uid != (long)geteuid())
        snprintf(why, sizeof why,
                 "it belongs to another user (uid %ld, you are %ld) and you lack CAP_SYS_PTRACE; attach as "
                 "that user, or with that capability (root outside a container; a container started "
                 "with --cap-add=SYS_PTRACE)",
                 uid, (long)geteuid());
    else if (scope >= 1)
        snprintf(why, sizeof why, "Yama's kernel.yama.ptrace_scope is %d (%s)", scope,
                 scope == 1 ? "only a parent may trace; run as root or set it to 0" : "tracing is restricted to root or disabled");
    else
        snprintf(why, sizeof why,
                 "the process is not dumpable (PR_SET_DUMPABLE 0, setuid) or runs in a container without CAP_SYS_PTRACE");
    snprintf(err, errlen, "ptrace is not permitted on process %d (%s): %s", (int)pid, strerror(e), why);
    return OP_INJECT_NOT_PERMITTED;
}

op_inject_status op_attach_inject(pid_t pid, const char *lib_path, char *err, size_t errlen)
{
    target t;
    memset(&t, 0, sizeof t);
    t.pid = pid;
    if (kill(pid, 0) != 0 && errno == ESRCH) {
        snprintf(err, errlen, "no process %d", (int)pid);
        return OP_INJECT_NO_PROCESS;
    }
    char libc_path[4096];
    uint64_t bias = 0;
    if (read_maps(&t, libc_path, sizeof libc_path, &bias, err, errlen) != 0) {
        if (errno == EACCES || errno == EPERM) return refused(pid, errno, err, errlen);
        return errno == ENOENT ? OP_INJECT_NO_PROCESS : OP_INJECT_UNSUPPORTED;
    }
    errno = 0;
    if (find_dlopen(&t, libc_path, bias, err, errlen) != 0) {
        /* its libc is read through /proc/PID/root: refused there without CAP_SYS_PTRACE */
        if (errno == EACCES || errno == EPERM) return refused(pid, errno, err, errlen);
        return OP_INJECT_UNSUPPORTED;
    }
    if (find_sigreturn(&t, err, errlen) != 0) {
        if (errno == EACCES || errno == EPERM) return refused(pid, errno, err, errlen);
        return OP_INJECT_UNSUPPORTED;
    }
    if (getenv("OMNIPROF_ATTACH_DEBUG"))
        fprintf(stderr, "attach: libc %s bias 0x%llx dlopen 0x%llx%s sigreturn 0x%llx\n", libc_path, (unsigned long long)bias,
                (unsigned long long)t.dlopen_addr, t.dlopen_is_private ? " (__libc_dlopen_mode)" : "",
                (unsigned long long)t.sigreturn_addr);
    /* Steps 1-2: up to ~3 s of tries, threads in turn. */
    for (int attempt = 0; attempt < 150; attempt++) {
        pid_t tids[64];
        int n = list_threads(pid, tids, 64);
        if (n == 0) {
            snprintf(err, errlen, "process %d ended", (int)pid);
            return OP_INJECT_NO_PROCESS;
        }
        pid_t tid = tids[attempt % n];
        if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0) {
            if (errno == EPERM || errno == EACCES) return refused(pid, errno, err, errlen);
            continue; /* the thread ended meanwhile */
        }
        if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 || wait_stop(tid) != 0) {
            ptrace(PTRACE_DETACH, tid, 0, 0);
            continue;
        }
        struct user_regs_struct regs;
        long long restart_nr = -1;
        /* the first ~1 s only where the program sees nothing; then also a sleep, made again
         * after the call (a program that sleeps between short bursts is almost always asleep) */
        safety s = ptrace(PTRACE_GETREGS, tid, 0, &regs) == 0 ? check_point(&t, tid, &regs, attempt >= 50, &restart_nr)
                                                               : BAD;
        if (s != BAD && getenv("OMNIPROF_ATTACH_DEBUG"))
            fprintf(stderr, "attach: try %d thread %d: rip 0x%llx orig_rax %lld rax %lld: %s (restart %lld)\n", attempt,
                    (int)tid, (unsigned long long)regs.rip, (long long)regs.orig_rax, (long long)regs.rax,
                    s == SAFE ? "safe" : "not now", restart_nr);
        if (s == SAFE && redirect(&t, tid, &regs, restart_nr, lib_path) == 0) {
            ptrace(PTRACE_DETACH, tid, 0, 0); /* step 5 happens without us */
            return OP_INJECT_OK;
        }
        ptrace(PTRACE_DETACH, tid, 0, 0); /* unchanged: the kernel restarts what was interrupted */
        if (s == BAD) {
            snprintf(err, errlen, "cannot read or set the registers of thread %d of process %d", (int)tid, (int)pid);
            return OP_INJECT_FAILED;
        }
        sleep_ms(20);
    }
    snprintf(err, errlen,
             "no thread of process %d reached a safe point in 3 s (each was inside the dynamic loader or running C "
             "library code, or making one of malloc's system calls); nothing was changed; try again",
             (int)pid);
    return OP_INJECT_NO_SAFE_POINT;
}

#else /* !__x86_64__ */

op_inject_status op_attach_inject(pid_t pid, const char *lib_path, char *err, size_t errlen)
{
    (void)pid, (void)lib_path;
    snprintf(err, errlen, "attaching is implemented for x86-64 only (docs/instrument.md, \"attach on aarch64\")");
    return OP_INJECT_UNSUPPORTED;
}

#endif
