/* python_frames.c — Python frames in sampled call stacks (CPython 3.8 to 3.13).
 *
 * A sample of a CPython program unwinds to the interpreter's C frames: _PyEval_EvalFrameDefault
 * runs the user's Python functions, and its frame alone says nothing about them. The interpreter
 * keeps the Python frames of each thread in a chain of its own (the thread state's current frame,
 * then each frame's `previous`; in 3.8-3.10 heap PyFrameObjects linked by `f_back`, each run by
 * a C call of its own); this file reads that chain in the sampled thread's signal handler
 * and puts the Python frames into the stack in place of the eval-loop frames that ran them.
 *
 * In the handler (op_cpu_py_capture; async-signal-safe): the thread's PyThreadState comes from
 * PyGILState_GetThisThreadState(), which in 3.8-3.13 reads two globals of _PyRuntime and calls
 * pthread_getspecific on the interpreter's thread-state key (no lock, no allocation; the key is
 * set for the main thread and every thread Python started or adopted). Every read of the
 * interpreter's memory goes through process_vm_readv on our own pid: a frame half-written by
 * the interrupted code, or freed, gives an error, never a fault; the frames are read through a
 * 4 KiB window below the current one (win_fill: one call for the usual chain, not one per
 * frame). Each frame gives two words (OP_CPU_PY_WORDS):
 *     raw = (code object address >> 3) << 20 | ends-an-eval-call << 19 | instruction index
 *     identity = a hash of the code object's type, file, name, qualname, location table and
 *                first line, read in the handler (identify: one process_vm_readv for up to 16
 *                code objects) while the frame holds the object; 0: not a code object
 * "ends an eval call" marks the outermost frame that one C call of the eval loop runs: 3.11's
 * `is_entry`, the frame under a 3.12/3.13 shim frame (owner FRAME_OWNED_BY_CSTACK), every frame
 * in 3.8-3.10. The instruction index is in code units (f_lasti of 3.8/3.9 counts bytes: halved).
 *
 * In the allocator (op_cpu_py_merge): each raw entry is resolved to (qualified name, file, line).
 * The allocator runs up to 50 ms after the sample (more when it falls behind), when the program
 * may have freed the code object: the last samples of a run are named after Py_Finalize freed
 * main's and <module>'s code objects, a module's body after its import. So an entry is found
 * by (address, identity at the sample) without reading anything; only a new one is read, and
 * kept when the object read now has the sample's identity (its type PyCode_Type, its name and
 * file unicode objects, the line from its location table at the instruction index). A code
 * object gone before it was ever named is the frame PY_GONE, never another object's name nor a
 * frame left out; a sample holding a code object not yet named wakes the allocator at once
 * (g_known), so such code is named while it lives. Each distinct code object gets an id; the
 * sample's frame is
 *     frame = 1 << 63 | id << 24 | line          (user-space addresses are below 2^47; module
 *                                                 tags of modules.c stay below bit 63)
 * and op_cpu_py_symbolize names it at the end of the run from the kept strings, so a code
 * object freed before the end (a module unloaded, Py_Finalize) still has its name.
 * The eval-loop frames: the native frames inside _PyEval_EvalFrameDefault (its dynamic symbol's
 * range) are replaced, innermost first, by the Python frames up to the next "ends an eval call";
 * Python frames left when the native walk stopped early go on top of it.
 *
 * Layouts: one row per minor version (k_layouts; lt_fmt says which frames and line table it has).
 * Where the thread state's path to the current frame differs from the row (a distribution's
 * patch), a sample that finds a frame there that is not one looks for the path among the thread
 * state's first 256 bytes (a pointer path that ends at a frame of a code object) and keeps what
 * it found; nothing found in 64 such samples turns Python frames off (one info line). */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend/cpu/cpu_internal.h"
#include "common/alloc.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/u64map.h"

#define PY_RAW_BOUNDARY (UINT64_C(1) << 19)
#define PY_RAW_LASTI_MAX (PY_RAW_BOUNDARY - 1)
#define PY_FRAME_TAG (UINT64_C(1) << 63)
#define PY_LINE_BITS 24
#define PY_LINE_MAX ((UINT64_C(1) << PY_LINE_BITS) - 1)

/* The line-table format of a row (lt_fmt), which also says what its frames are:
 *   PY_LT_LOCATIONS  3.11+: _PyInterpreterFrame in the thread's data stack, fr_instr a pointer to
 *                    the instruction, co_linetable the location table (PEP 657)
 *   PY_LT_LINETABLE  3.10: PyFrameObject (heap), fr_instr the int f_lasti in code units,
 *                    co_linetable (PEP 626): (byte-address delta, signed line delta) pairs,
 *                    line delta -128 for "no line"
 *   PY_LT_LNOTAB     3.8, 3.9: PyFrameObject, f_lasti in bytes, co_lnotab: (byte-address delta,
 *                    signed line delta) pairs, the line changing after its address
 * In 3.8-3.10 every Python frame is run by its own call of the eval loop (the chain's frames are
 * each other's f_back, each holding a reference to its code object and to its caller). */
enum { PY_LT_LOCATIONS, PY_LT_LINETABLE, PY_LT_LNOTAB };

typedef struct py_layout {
    int minor;
    int ts_frame;   /* thread state -> _PyCFrame (3.11, 3.12) or the frame (3.13, 3.8-3.10) */
    int cframe_cur; /* _PyCFrame -> current frame; -1: ts_frame holds the frame itself */
    int fr_code, fr_prev,
        fr_instr;     /* frame: code (executable), previous (f_back), instruction (f_lasti) */
    int fr_entry;     /* 3.11's is_entry byte, -1 none */
    int fr_owner;     /* owner byte, -1 none */
    int owner_cstack; /* owner value of a shim frame, -1 none */
    /* code object; before 3.11 there is no co_qualname: the row names co_name there */
    int co_filename, co_name, co_qualname, co_linetable, co_firstlineno;
    int uni_ascii, uni_compact; /* sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject) */
    int lt_fmt;                 /* PY_LT_* above */
} py_layout;

/* 3.8-3.10 offsets: Include/cpython/{pystate,frameobject,code}.h of 3.8.18, 3.9.18, 3.10.13
 * (checked against the running interpreters: tstate->frame is sys._getframe(), f_back, f_code
 * and f_lasti of a frame, the code object's fields); 3.11-3.13: see docs/cpu.md. */
static const py_layout k_layouts[] = {
    {8, 24, -1, 32, 24, 104, -1, -1, -1, 104, 112, 112, 120, 40, 48, 72, PY_LT_LNOTAB},
    {9, 24, -1, 32, 24, 104, -1, -1, -1, 104, 112, 112, 120, 40, 48, 72, PY_LT_LNOTAB},
    {10, 24, -1, 32, 24, 96, -1, -1, -1, 104, 112, 112, 120, 40, 48, 72, PY_LT_LINETABLE},
    {11, 56, 8, 32, 48, 56, 68, 69, -1, 112, 120, 128, 136, 72, 48, 72, PY_LT_LOCATIONS},
    {12, 56, 0, 0, 8, 56, -1, 70, 3, 112, 120, 128, 136, 68, 40, 56, PY_LT_LOCATIONS},
    {13, 72, -1, 0, 8, 56, -1, 70, 3, 112, 120, 128, 136, 68, 40, 56, PY_LT_LOCATIONS},
};

static const py_layout *g_lay;
static _Atomic int g_on;            /* capture runs */
static _Atomic int g_ts_frame = -1; /* path found (discovery) */
static _Atomic int g_tries;
static _Atomic int g_gave_up;
static int g_minor, g_micro;
static uint64_t g_code_type, g_unicode_type, g_bytes_type;
static uint64_t g_code_units; /* offsetof(PyCodeObject, co_code_adaptive) = tp_basicsize */
static uint64_t g_eval_lo, g_eval_hi;
static void *(*g_get_tstate)(void);

static inline bool rd(pid_t pid, uint64_t addr, void *dst, size_t n)
{
    if (addr < 4096)
        return false;
    struct iovec l = {dst, n}, r = {(void *)(uintptr_t)addr, n};
    return syscall(SYS_process_vm_readv, pid, &l, 1ul, &r, 1ul, 0ul) == (long)n;
}

static inline uint64_t u64at(const uint8_t *b, int off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

bool op_cpu_py_enabled(void)
{
    return atomic_load_explicit(&g_on, memory_order_relaxed) != 0;
}

void op_cpu_py_setup(void)
{
    if (!op_setting_bool(OP_SET_SAMPLING_PYTHON))
        return;
    const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    if (!version || !eval)
        return; /* not a Python process (or one without exported symbols) */
    int major = 0;
    if (sscanf(version(), "%d.%d.%d", &major, &g_minor, &g_micro) < 2 || major != 3)
        return;
    for (size_t i = 0; i < sizeof k_layouts / sizeof k_layouts[0]; i++)
        if (k_layouts[i].minor == g_minor)
            g_lay = &k_layouts[i];
    if (!g_lay) {
        op_info(
            "cpu: Python %d.%d: its frames are not read (CPython 3.8-3.13 are); samples show the "
            "interpreter's C frames",
            major, g_minor);
        return;
    }
    Dl_info di;
    const ElfW(Sym) *sym = NULL;
    void *code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
    g_get_tstate = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    g_unicode_type = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    g_bytes_type = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
    if (!code_type || !g_get_tstate || !g_unicode_type || !g_bytes_type ||
        !dladdr1(eval, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size) {
        op_info(
            "cpu: Python 3.%d: the interpreter's symbols are not exported; its frames are not read",
            g_minor);
        return;
    }
    g_code_type = (uint64_t)(uintptr_t)code_type;
    memcpy(&g_code_units, (const uint8_t *)code_type + 32, sizeof g_code_units); /* tp_basicsize */
    g_eval_lo = (uint64_t)(uintptr_t)eval;
    g_eval_hi = g_eval_lo + sym->st_size;
    if (g_code_units < 64 || g_code_units > 512)
        return;
    if (rd(getpid(), g_eval_lo, &di, 1) == false) {
        op_info("cpu: Python 3.%d: process_vm_readv refused on our own process; its frames are not "
                "read",
                g_minor);
        return;
    }
    atomic_store(&g_on, 1);
    op_info("cpu: Python 3.%d.%d: Python frames read in samples", g_minor, g_micro);
}

/* The thread state's current frame through path (ts_frame, cframe_cur); 0 if none. */
static uint64_t frame_via(pid_t pid, uint64_t ts, int ts_frame)
{
    uint64_t p;
    if (!rd(pid, ts + (uint64_t)ts_frame, &p, sizeof p) || !p)
        return 0;
    if (g_lay->cframe_cur < 0)
        return p;
    uint64_t f;
    if (!rd(pid, p + (uint64_t)g_lay->cframe_cur, &f, sizeof f))
        return 0;
    return f;
}

/* Is f the head of a frame chain (one of its first frames runs a code object)? */
static bool looks_like_chain(pid_t pid, uint64_t f)
{
    for (int i = 0; i < 4 && f; i++) {
        uint64_t code, type, prev;
        if (!rd(pid, f + (uint64_t)g_lay->fr_code, &code, sizeof code) ||
            !rd(pid, f + (uint64_t)g_lay->fr_prev, &prev, sizeof prev))
            return false;
        if (code && rd(pid, code + 8, &type, sizeof type) && type == g_code_type)
            return true;
        f = prev;
    }
    return false;
}

/* The row's path read with plain loads, once the first samples found it right. Safe: ts is this
 * thread's own thread state, which the interpreter frees only on this thread after it took it
 * out of the thread-state key (a signal before that finds it whole, one after finds no state);
 * its _PyCFrame (3.11, 3.12) is tstate->root_cframe or a local of an eval-loop call still
 * running on this thread (the interpreter restores tstate->cframe before that call returns).
 * Two process_vm_readv fewer per sample (about 5 us each of CPU on the loaded 2-core VM). A
 * path found elsewhere in the thread state (a distribution's patch) keeps the checked reads. */
static uint64_t frame_direct(uint64_t ts)
{
    uint64_t p = *(const volatile uint64_t *)(uintptr_t)(ts + (uint64_t)g_lay->ts_frame);
    if (!p || g_lay->cframe_cur < 0)
        return p;
    return *(const volatile uint64_t *)(uintptr_t)(p + (uint64_t)g_lay->cframe_cur);
}

static uint64_t current_frame(pid_t pid, uint64_t ts)
{
    int off = atomic_load_explicit(&g_ts_frame, memory_order_relaxed);
    if (off >= 0)
        return off == g_lay->ts_frame ? frame_direct(ts) : frame_via(pid, ts, off);
    /* first samples: the row's path, else the first path in the thread state's first 256 bytes
     * that ends at a frame chain; a thread state without a frame (nothing running) says nothing */
    uint64_t f = frame_via(pid, ts, g_lay->ts_frame);
    if (!f)
        return 0; /* no Python running on this thread now (or the row's path is wrong: no frames) */
    if (looks_like_chain(pid, f)) {
        atomic_store_explicit(&g_ts_frame, g_lay->ts_frame, memory_order_relaxed);
        return f;
    }
    for (int o = 16; o < 256; o += 8) {
        f = frame_via(pid, ts, o);
        if (f && looks_like_chain(pid, f)) {
            atomic_store_explicit(&g_ts_frame, o, memory_order_relaxed);
            return f;
        }
    }
    if (atomic_fetch_add_explicit(&g_tries, 1, memory_order_relaxed) >= 64) {
        atomic_store_explicit(&g_on, 0, memory_order_relaxed);
        atomic_store_explicit(&g_gave_up, 1, memory_order_relaxed);
    }
    return 0;
}

/* The frame window: one process_vm_readv brings up to PY_WIN bytes of memory below a frame's
 * header (costs ~3 us of CPU on the 2-core VM whatever the size up to a few KiB, as much as one
 * 80-byte read), and the frames found in it are read from the copy. A thread's frames lie in its
 * data stack, each caller's below its callee's, so one window usually holds the whole chain
 * (a generator's frame lives in the generator object: one more window). The remote side is cut
 * into page-aligned pieces, highest first: an unmapped page below the data stack ends the copy
 * there (process_vm_readv stops at the first piece it cannot read) and the pieces above it are
 * kept. In 3.8-3.10 the frames are heap objects (PyFrameObject, from the object allocator's
 * pools): a caller's frame is in the window only where it happens to lie below its callee's,
 * else it costs one more window, as one read of its header would. */
#define PY_WIN 4096u
#define PY_FRAME_HDR_MAX 112u /* a frame's header: 80 bytes (3.11+), 112 (3.8-3.10: f_lasti) */
#define PY_PAGE 4096u

typedef struct py_win {
    uint64_t lo, hi; /* [lo, hi) of the remote memory held in buf; lo == hi: empty */
    uint64_t base;   /* the remote address of buf[0] */
    uint32_t hdr;    /* bytes of a frame's header that are read */
    uint8_t buf[PY_WIN + PY_FRAME_HDR_MAX];
} py_win;

static bool win_fill(pid_t pid, py_win *w, uint64_t f)
{
    uint64_t hi = f + w->hdr, lo = hi > PY_WIN + 4096 ? hi - PY_WIN : 4096;
    struct iovec l[PY_WIN / PY_PAGE + 2], r[PY_WIN / PY_PAGE + 2];
    uint64_t len[PY_WIN / PY_PAGE + 2], start = f & ~(uint64_t)(PY_PAGE - 1);
    int n = 0;
    for (uint64_t top = hi; top > lo && n < (int)(sizeof l / sizeof l[0]); n++) {
        uint64_t a = start > lo ? start : lo;
        l[n].iov_base = w->buf + (a - lo), l[n].iov_len = top - a;
        r[n].iov_base = (void *)(uintptr_t)a, r[n].iov_len = top - a;
        len[n] = top - a;
        top = a, start = a - PY_PAGE;
    }
    w->lo = w->hi = 0;
    w->base = lo;
    long got = syscall(SYS_process_vm_readv, pid, l, (unsigned long)n, r, (unsigned long)n, 0ul);
    if (got < (long)len[0])
        return false; /* the frame's own header is not readable */
    uint64_t have = hi;
    for (int i = 0; i < n && got >= (long)len[i]; i++) /* whole pieces only */
        got -= (long)len[i], have -= len[i];
    w->lo = have, w->hi = hi;
    return true;
}

/* The frame header at f, from the window (refilled below f when f is not in it). */
static const uint8_t *win_frame(pid_t pid, py_win *w, uint64_t f)
{
    if (f < 4096 || f > UINT64_MAX - w->hdr)
        return NULL;
    if (!(f >= w->lo && f + w->hdr <= w->hi) && !win_fill(pid, w, f))
        return NULL;
    return w->buf + (f - w->base);
}

/* The identity of a code object: its type and the fields that name it (file, name, qualified
 * name, location table, first line), as one nonzero hash; 0 when blk (the code object's bytes
 * from offset 8 to PY_IDENT_END) is not a code object. The same on both sides: the handler
 * computes it at the sample, the allocator again when it reads the object. */
#define PY_IDENT_END 144u /* past co_linetable in every row */

static uint64_t ident_of(const uint8_t *blk)
{
    const py_layout *L = g_lay;
    if (u64at(blk, 0) != g_code_type)
        return 0;
    uint32_t first;
    memcpy(&first, blk + L->co_firstlineno - 8, sizeof first);
    uint64_t h = first, f[4] = {u64at(blk, L->co_filename - 8), u64at(blk, L->co_name - 8),
                                u64at(blk, L->co_qualname - 8), u64at(blk, L->co_linetable - 8)};
    for (int i = 0; i < 4; i++) {
        h ^= f[i] + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
        h *= UINT64_C(0xff51afd7ed558ccd);
        h ^= h >> 33;
    }
    return h ? h : 1;
}

/* Fill the identity word of each of the n raw frames in out (pairs: frame, identity): the code
 * objects' bytes [8, PY_IDENT_END) in one process_vm_readv per PY_IDENT_BATCH frames. A code
 * object is alive while a frame of the chain holds it, so what is read here is what the frame
 * ran; the allocator, which names it later (after the program may have freed it), checks the
 * object it reads against this. A read that fails leaves 0 (not a code object). */
#define PY_IDENT_BATCH 16u
#define PY_IDENT_LEN (PY_IDENT_END - 8u)

/* The code objects the allocator has resolved (named, or found gone), by code_key: a slot
 * holds the last key stored there. The handler asks for the allocator at once when a frame's
 * key is not here (a code object it has not seen), so that short-lived code (a module's body
 * run once at import, code made by exec) is named while the program still holds it, not up to
 * 50 ms later; a slot shared by two keys only costs wake-ups. */
#define PY_KNOWN_SLOTS 4096u
static _Atomic uint64_t g_known[PY_KNOWN_SLOTS];

static uint64_t code_key(uint64_t addr, uint64_t ident)
{
    uint64_t k = (addr ^ (ident * UINT64_C(0x9e3779b97f4a7c15))) * UINT64_C(0xc4ceb9fe1a85ec53);
    return k ? k : 1;
}

static void known_put(uint64_t key)
{
    atomic_store_explicit(&g_known[key % PY_KNOWN_SLOTS], key, memory_order_relaxed);
}

static bool known(uint64_t key)
{
    return atomic_load_explicit(&g_known[key % PY_KNOWN_SLOTS], memory_order_relaxed) == key;
}

static void identify(pid_t pid, uint64_t *out, uint32_t n)
{
    uint8_t buf[PY_IDENT_BATCH * PY_IDENT_LEN];
    struct iovec l[PY_IDENT_BATCH], r[PY_IDENT_BATCH];
    uint32_t i = 0;
    while (i < n) {
        uint32_t k = n - i < PY_IDENT_BATCH ? n - i : PY_IDENT_BATCH;
        for (uint32_t j = 0; j < k; j++) {
            l[j].iov_base = buf + j * PY_IDENT_LEN, l[j].iov_len = PY_IDENT_LEN;
            r[j].iov_base = (void *)(uintptr_t)(((out[(i + j) * 2] >> 20) << 3) + 8);
            r[j].iov_len = PY_IDENT_LEN;
        }
        long got =
            syscall(SYS_process_vm_readv, pid, l, (unsigned long)k, r, (unsigned long)k, 0ul);
        uint32_t whole = got > 0 ? (uint32_t)((uint64_t)got / PY_IDENT_LEN) : 0;
        for (uint32_t j = 0; j < whole; j++)
            out[(i + j) * 2 + 1] = ident_of(buf + j * PY_IDENT_LEN);
        i += whole + (whole < k); /* the piece that failed keeps 0; the next batch follows it */
    }
}

uint32_t op_cpu_py_capture(uint64_t *out, uint32_t max, bool *fresh)
{
    if (!atomic_load_explicit(&g_on, memory_order_relaxed))
        return 0;
    void *ts = g_get_tstate();
    if (!ts)
        return 0; /* a thread Python does not know, or before Py_Initialize */
    pid_t pid = getpid();
    uint64_t f = current_frame(pid, (uint64_t)(uintptr_t)ts);
    const py_layout *L = g_lay;
    uint32_t n = 0;
    bool objs = L->lt_fmt != PY_LT_LOCATIONS; /* 3.8-3.10: PyFrameObject, one eval call each */
    py_win w;
    w.lo = w.hi = 0;
    w.hdr = objs ? PY_FRAME_HDR_MAX : 80u;
    for (int guard = 0; f && n < max && guard < 4096; guard++) {
        const uint8_t *b = win_frame(pid, &w, f);
        if (!b)
            break;
        uint64_t code = u64at(b, L->fr_code), prev = u64at(b, L->fr_prev), lasti;
        if (L->owner_cstack >= 0 && b[L->fr_owner] == L->owner_cstack) {
            /* a shim frame (3.12+): the C call of the eval loop ends at the frame below it */
            if (n)
                out[(n - 1) * 2] |= PY_RAW_BOUNDARY;
        } else if (code && !(code & 7)) {
            bool ends = L->fr_entry >= 0 && b[L->fr_entry];
            if (objs) { /* f_lasti: -1 before the first instruction; bytes in 3.8/3.9 */
                int32_t li;
                memcpy(&li, b + L->fr_instr, sizeof li);
                lasti = li < 0 ? 0 : (uint64_t)li / (L->lt_fmt == PY_LT_LNOTAB ? 2u : 1u);
                ends = true;
            } else {
                uint64_t instr = u64at(b, L->fr_instr), start = code + g_code_units;
                lasti = instr > start ? (instr - start) / 2 : 0;
            }
            if (lasti > PY_RAW_LASTI_MAX)
                lasti = PY_RAW_LASTI_MAX;
            out[n * 2] = (code >> 3) << 20 | (ends ? PY_RAW_BOUNDARY : 0) | lasti;
            out[n * 2 + 1] = 0;
            n++;
        }
        if (prev == f)
            break;
        f = prev;
    }
    identify(pid, out, n);
    for (uint32_t i = 0; i < n && !*fresh; i++)
        if (out[i * 2 + 1] && !known(code_key((out[i * 2] >> 20) << 3, out[i * 2 + 1])))
            *fresh = true;
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* Resolution (allocator threads) and symbols (the writer, at the end).                      */

typedef struct py_code {
    uint64_t addr, ident; /* the code object's address and identity (ident_of) */
    int firstlineno;
    char *name, *file;
    uint8_t *lt;
    size_t lt_len;
} py_code;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* the code table; a leaf lock */
static py_code *g_codes;
static size_t g_n_codes, g_cap_codes;
static op_u64map g_by_key; /* code_key(address, identity) -> index + 1 of its entry */
static op_u64map g_lines;   /* entry << 20 | instruction index -> line + 1 */
static bool g_logged_gave_up;
static long g_gone = -1; /* the entry of the frames whose code object is gone: named PY_GONE */
#define PY_GONE "[python: code object freed]"

/* A str object as UTF-8 (compact strings: every str a code object names); NULL if not one. */
static char *read_str(pid_t pid, uint64_t obj)
{
    uint8_t h[80];
    if (!obj || !rd(pid, obj, h, (size_t)g_lay->uni_compact) || u64at(h, 8) != g_unicode_type)
        return NULL;
    uint64_t len = u64at(h, 16);
    uint32_t state;
    memcpy(&state, h + 32, sizeof state);
    unsigned kind = (state >> 2) & 7u, compact = (state >> 5) & 1u, ascii = (state >> 6) & 1u;
    if (!compact || (kind != 1 && kind != 2 && kind != 4))
        return NULL;
    if (len > 1024)
        len = 1024;
    uint8_t raw[4096];
    uint64_t data = obj + (uint64_t)(ascii ? g_lay->uni_ascii : g_lay->uni_compact);
    if (len && !rd(pid, data, raw, (size_t)(len * kind)))
        return NULL;
    char *s = op_malloc(len * 4 + 1), *o = s;
    if (!s)
        return NULL;
    for (uint64_t i = 0; i < len; i++) {
        uint32_t c = kind == 1   ? raw[i]
                     : kind == 2 ? ((const uint16_t *)(const void *)raw)[i]
                                 : ((const uint32_t *)(const void *)raw)[i];
        if (c < 0x80)
            *o++ = (char)c;
        else if (c < 0x800)
            *o++ = (char)(0xc0 | (c >> 6)), *o++ = (char)(0x80 | (c & 0x3f));
        else if (c < 0x10000)
            *o++ = (char)(0xe0 | (c >> 12)), *o++ = (char)(0x80 | ((c >> 6) & 0x3f)),
            *o++ = (char)(0x80 | (c & 0x3f));
        else
            *o++ = (char)(0xf0 | (c >> 18)), *o++ = (char)(0x80 | ((c >> 12) & 0x3f)),
            *o++ = (char)(0x80 | ((c >> 6) & 0x3f)), *o++ = (char)(0x80 | (c & 0x3f));
    }
    *o = 0;
    return s;
}

static uint8_t *read_bytes(pid_t pid, uint64_t obj, size_t *len)
{
    uint8_t h[32];
    *len = 0;
    if (!obj || !rd(pid, obj, h, sizeof h) || u64at(h, 8) != g_bytes_type)
        return NULL;
    uint64_t n = u64at(h, 16);
    if (n > (1u << 22))
        return NULL;
    uint8_t *b = op_malloc(n ? n : 1);
    if (!b)
        return NULL;
    if (n && !rd(pid, obj + 32, b, n)) {
        op_free(b);
        return NULL;
    }
    *len = n;
    return b;
}

static unsigned varint(const uint8_t *lt, size_t n, size_t *i)
{
    unsigned v = 0, shift = 0;
    while (*i < n) {
        uint8_t b = lt[(*i)++];
        v |= (unsigned)(b & 63) << shift;
        shift += 6;
        if (!(b & 64) || shift > 24)
            break;
    }
    return v;
}

static int svarint(const uint8_t *lt, size_t n, size_t *i)
{
    unsigned u = varint(lt, n, i);
    return (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
}

/* The line of instruction index lasti from a 3.8/3.9 co_lnotab: (address delta, line delta)
 * byte pairs, addresses in bytes; an entry's line delta applies from its address on. */
static int line_lnotab(const py_code *c, uint64_t lasti)
{
    int line = c->firstlineno;
    uint64_t addr = 0, want = lasti * 2;
    for (size_t i = 0; i + 1 < c->lt_len; i += 2) {
        addr += c->lt[i];
        if (addr > want)
            break;
        line += (int8_t)c->lt[i + 1];
    }
    return line;
}

/* The line of instruction index lasti from a 3.10 co_linetable (PEP 626): each (address delta,
 * line delta) byte pair ends a range of addresses (bytes) that started where the previous one
 * ended and has the line so far plus its delta; a delta of -128 is a range without a line (the
 * line so far is kept for it here). The range holding the instruction gives its line. */
static int line_linetable(const py_code *c, uint64_t lasti)
{
    int line = c->firstlineno;
    uint64_t end = 0, want = lasti * 2;
    for (size_t i = 0; i + 1 < c->lt_len; i += 2) {
        int8_t d = (int8_t)c->lt[i + 1];
        end += c->lt[i];
        if (d != -128)
            line += d;
        if (want < end)
            break;
    }
    return line;
}

/* The line of instruction index lasti from a 3.11+ location table (entries: a first byte with
 * bit 7 set, code in bits 3-6, length - 1 in code units in bits 0-2, then code-specific bytes). */
static int line_at(const py_code *c, uint64_t lasti)
{
    if (g_lay->lt_fmt == PY_LT_LNOTAB)
        return line_lnotab(c, lasti);
    if (g_lay->lt_fmt == PY_LT_LINETABLE)
        return line_linetable(c, lasti);
    int line = c->firstlineno;
    uint64_t addr = 0;
    size_t i = 0;
    while (i < c->lt_len) {
        uint8_t b = c->lt[i++];
        if (!(b & 0x80))
            continue;
        unsigned code = (b >> 3) & 15u, len = (b & 7u) + 1u;
        if (code == 14) { /* long form: line delta, end line, column, end column */
            line += svarint(c->lt, c->lt_len, &i);
            varint(c->lt, c->lt_len, &i), varint(c->lt, c->lt_len, &i),
                varint(c->lt, c->lt_len, &i);
        } else if (code == 13) { /* no columns */
            line += svarint(c->lt, c->lt_len, &i);
        } else if (code >= 10 && code <= 12) { /* one line: delta 0-2, two column bytes */
            line += (int)code - 10;
            i += 2;
        } else if (code < 10) { /* short form: same line, one column byte */
            i += 1;
        } /* 15: no location: the line stays */
        if (lasti < addr + len)
            return line;
        addr += len;
    }
    return line;
}

static long new_entry(uint64_t addr, uint64_t ident, int first, char *name, char *file)
{
    if (g_n_codes == g_cap_codes) {
        size_t cap = g_cap_codes ? g_cap_codes * 2 : 256;
        py_code *grown = op_realloc(g_codes, cap * sizeof *g_codes);
        if (!grown) {
            op_free(name);
            op_free(file);
            return -1;
        }
        g_codes = grown, g_cap_codes = cap;
    }
    py_code *c = &g_codes[g_n_codes];
    memset(c, 0, sizeof *c);
    c->addr = addr, c->ident = ident, c->firstlineno = first, c->name = name, c->file = file;
    return (long)g_n_codes++;
}

/* Index of the code table entry of the code object that was at addr with identity ident when
 * the sample was taken: found by (address, identity) without reading anything, else read now;
 * -1 if it was not a code object then, -2 if it is gone now (freed, or another object at its
 * address) and was never named before: nothing left to name it by. */
static long code_entry(pid_t pid, uint64_t addr, uint64_t ident)
{
    uint8_t h[PY_IDENT_END];
    const py_layout *L = g_lay;
    uint64_t key = code_key(addr, ident), idx;
    if (!ident)
        return -1;
    known_put(key); /* named, or found gone, below: no more wake-ups for it */
    if (op_u64map_get(&g_by_key, key, &idx) && g_codes[idx - 1].addr == addr &&
        g_codes[idx - 1].ident == ident)
        return (long)(idx - 1);
    if (!rd(pid, addr, h, sizeof h) || ident_of(h + 8) != ident)
        return -2;
    int first;
    memcpy(&first, h + L->co_firstlineno, sizeof first);
    char *name = read_str(pid, u64at(h, L->co_qualname));
    if (!name)
        name = read_str(pid, u64at(h, L->co_name));
    char *file = read_str(pid, u64at(h, L->co_filename));
    if (!name || !file) {
        op_free(name);
        op_free(file);
        return -1;
    }
    long e = new_entry(addr, ident, first, name, file);
    if (e < 0)
        return -1;
    g_codes[e].lt = read_bytes(pid, u64at(h, L->co_linetable), &g_codes[e].lt_len);
    op_u64map_put(&g_by_key, key, (uint64_t)e + 1);
    return e;
}

static uint64_t g_n_resolved, g_n_unresolved, g_n_gone, g_n_samples; /* under g_lock */

/* The frame of raw frame r (r[0] the frame, r[1] its identity), 0 for none. A code object gone
 * before it was named gives the PY_GONE frame: the sample keeps its depth and says what it lost,
 * instead of a stack with a frame silently missing. */
static uint64_t resolve(pid_t pid, const uint64_t *r)
{
    uint64_t raw = r[0];
    long e = code_entry(pid, (raw >> 20) << 3, r[1]);
    if (e == -2) {
        g_n_gone++;
        if (g_gone < 0) {
            char *name = op_malloc(sizeof PY_GONE), *file = op_malloc(1);
            if (name && file) {
                memcpy(name, PY_GONE, sizeof PY_GONE);
                file[0] = 0;
                g_gone = new_entry(0, 0, 0, name, file);
            } else {
                op_free(name);
                op_free(file);
            }
        }
        return g_gone < 0 ? 0 : PY_FRAME_TAG | (uint64_t)g_gone << PY_LINE_BITS;
    }
    if (e < 0) {
        g_n_unresolved++;
        return 0;
    }
    g_n_resolved++;
    uint64_t key = (uint64_t)e << 20 | (raw & PY_RAW_LASTI_MAX), l1;
    int line;
    if (op_u64map_get(&g_lines, key, &l1)) {
        line = (int)l1 - 1;
    } else {
        line = line_at(&g_codes[e], raw & PY_RAW_LASTI_MAX);
        op_u64map_put(&g_lines, key, (uint64_t)(line + 1));
    }
    uint64_t l = line > 0 ? (uint64_t)line : 0;
    if (l > PY_LINE_MAX)
        l = PY_LINE_MAX;
    return PY_FRAME_TAG | (uint64_t)e << PY_LINE_BITS | l;
}

uint32_t op_cpu_py_merge(uint64_t *frames, uint32_t n, const uint64_t *raw, uint32_t m,
                         uint32_t max)
{
    if (atomic_load_explicit(&g_gave_up, memory_order_relaxed) && !g_logged_gave_up) {
        g_logged_gave_up = true;
        op_info("cpu: Python 3.%d: no frame chain found from the thread state; Python frames off",
                g_minor);
    }
    if (!m)
        return n;
    uint64_t out[OMNIPROF_CPU_SAMPLE_MAX_FRAMES];
    uint32_t k = 0, j = 0;
    pid_t pid = getpid();
    pthread_mutex_lock(&g_lock);
    g_n_samples++;
    for (uint32_t i = 0; i < n && k < max; i++) {
        uint64_t f = frames[i];
        if (f < g_eval_lo || f >= g_eval_hi || j >= m) {
            out[k++] = f;
            continue;
        }
        /* an eval-loop frame: the Python frames it runs, innermost first */
        while (j < m && k < max) {
            const uint64_t *r = raw + (size_t)j++ * OP_CPU_PY_WORDS;
            uint64_t p = resolve(pid, r);
            if (p)
                out[k++] = p;
            if (r[0] & PY_RAW_BOUNDARY)
                break;
        }
    }
    while (j < m && k < max) { /* the native walk stopped early: the rest on top */
        uint64_t p = resolve(pid, raw + (size_t)j++ * OP_CPU_PY_WORDS);
        if (p)
            out[k++] = p;
    }
    pthread_mutex_unlock(&g_lock);
    memcpy(frames, out, (size_t)k * sizeof *out);
    return k;
}

bool op_cpu_py_is_frame(uint64_t frame)
{
    return (frame & PY_FRAME_TAG) != 0;
}

omniprof_status_t op_cpu_py_symbolize(uint64_t frame, omniprof_symbol_cb_t cb, void *data)
{
    omniprof_symbol_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    info.address = frame;
    uint64_t e = (frame & ~PY_FRAME_TAG) >> PY_LINE_BITS;
    pthread_mutex_lock(&g_lock);
    if (e >= g_n_codes) {
        pthread_mutex_unlock(&g_lock);
        cb(&info, data);
        return OMNIPROF_STATUS_ERROR;
    }
    const py_code *c = &g_codes[e];
    info.function = c->name;
    info.function_mangled = c->name;
    info.file = c->file[0] ? c->file : NULL; /* PY_GONE: no file */
    info.line = (uint32_t)(frame & PY_LINE_MAX);
    info.module = "[python]";
    info.module_offset = 0;
    cb(&info, data);
    pthread_mutex_unlock(&g_lock);
    return OMNIPROF_STATUS_SUCCESS;
}

void op_cpu_py_report(void)
{
    pthread_mutex_lock(&g_lock);
    if (g_n_samples)
        op_info("cpu: Python frames: %llu samples with Python frames, %llu frames named, %llu not "
                "a code object at the sample (left out), %llu of code objects freed before "
                "they were named (shown as " PY_GONE "), %zu code objects",
                (unsigned long long)g_n_samples, (unsigned long long)g_n_resolved,
                (unsigned long long)g_n_unresolved, (unsigned long long)g_n_gone,
                g_n_codes - (g_gone >= 0));
    pthread_mutex_unlock(&g_lock);
}
