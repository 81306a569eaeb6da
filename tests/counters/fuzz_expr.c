/* fuzz_expr.c — fuzz target of the expression parser and evaluator (src/sdk/counters/expr.c).
 *
 * LLVMFuzzerTestOneInput is a libFuzzer entry point: build with clang -fsanitize=fuzzer
 * -DOMNIPROF_LIBFUZZER to run it under libFuzzer. Without libFuzzer (CTest), main() is a
 * standalone driver: it runs every file of a corpus directory, then for a given number of
 * seconds inputs made by mutating corpus entries (byte flips, token insertions, truncation,
 * splices) and by pure random bytes. Each input must parse or fail with a column inside the
 * text (invariant (2) of expr.h), and evaluate or fail, without crashing (the CTest build runs
 * under ASan/UBSan with `make test-sanitize`). Usage: fuzz_expr CORPUS_DIR SECONDS [SEED] */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sdk/counters/expr.h"

static int lookup(const char *name, const double **v, size_t *n, void *data)
{
    (void)data;
    static const double vals[5] = {1.5, -2, 0, 1e300, 7};
    size_t len = strlen(name);
    if (len % 7 == 0)
        return -1; /* some names are unknown */
    *v = vals;
    *n = 1 + len % 5; /* vectors of 1..5 instances: exercises broadcast and mismatch */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2 * OP_EXPR_MAX_LEN)
        size = 2 * OP_EXPR_MAX_LEN;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    size_t len = strlen(text);
    op_expr_error e;
    op_expr *x = op_expr_parse(text, &e);
    if (!x) {
        if (e.column < 1 || (size_t)e.column > len + 1)
            if (!(len > OP_EXPR_MAX_LEN && e.column == OP_EXPR_MAX_LEN + 1))
                abort(); /* invariant (2) */
        char buf[512];
        op_expr_format_error("fuzz", text, &e, buf, sizeof buf);
    } else {
        double out[64];
        size_t n = 0;
        if (op_expr_eval(x, lookup, NULL, out, 64, &n, &e) == 0 && n == 0)
            abort();
        double s;
        op_expr_eval_scalar(x, lookup, NULL, &s, &e);
        for (size_t i = 0; i < op_expr_num_names(x); i++)
            if (!op_expr_name(x, i) || op_expr_name_column(x, i) < 1)
                abort();
        op_expr_free(x);
    }
    free(text);
    return 0;
}

#ifndef OMNIPROF_LIBFUZZER
static const char *const k_tokens[] = {"(", ")", "+", "-", "*", "/", ",", "sum(", "max(", "min(", "avg(", "abs(",
                                       "reduce(", ", sum)", "dram__bytes_read.sum", "a.b", "1e9", ".5", "0",
                                       "gpu__time_duration.sum", "  ", "\t", "((((", "))))", "1e", "x."};

static uint64_t g_rng;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

typedef struct entry {
    char *data;
    size_t len;
} entry;

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s CORPUS_DIR SECONDS [SEED]\n", argv[0]);
        return 2;
    }
    double seconds = atof(argv[2]);
    g_rng = argc > 3 ? strtoull(argv[3], NULL, 10) : (uint64_t)time(NULL);
    if (!g_rng)
        g_rng = 88172645463325252ull;
    printf("seed %llu\n", (unsigned long long)g_rng);
    entry corpus[256];
    size_t n = 0;
    DIR *d = opendir(argv[1]);
    if (!d) {
        fprintf(stderr, "cannot open corpus %s\n", argv[1]);
        return 2;
    }
    struct dirent *de;
    while ((de = readdir(d)) && n < 256) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], de->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        char buf[8192];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        corpus[n].data = malloc(len + 1);
        memcpy(corpus[n].data, buf, len);
        corpus[n].len = len;
        n++;
        LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    }
    closedir(d);
    printf("corpus: %zu inputs\n", n);
    if (n == 0)
        return 2;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t runs = 0;
    char buf[9000];
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
            break;
        for (int burst = 0; burst < 256; burst++, runs++) {
            const entry *src = &corpus[rnd() % n];
            size_t len = src->len < 4096 ? src->len : 4096;
            memcpy(buf, src->data, len);
            int muts = 1 + (int)(rnd() % 4);
            for (int m = 0; m < muts; m++) {
                switch (rnd() % 6) {
                case 0: /* flip a byte */
                    if (len)
                        buf[rnd() % len] = (char)rnd();
                    break;
                case 1: { /* insert a token */
                    const char *tok = k_tokens[rnd() % (sizeof k_tokens / sizeof *k_tokens)];
                    size_t tl = strlen(tok), at = len ? rnd() % (len + 1) : 0;
                    if (len + tl < 8192) {
                        memmove(buf + at + tl, buf + at, len - at);
                        memcpy(buf + at, tok, tl);
                        len += tl;
                    }
                    break;
                }
                case 2: /* truncate */
                    if (len)
                        len = rnd() % len;
                    break;
                case 3: { /* splice another entry's tail */
                    const entry *o = &corpus[rnd() % n];
                    size_t from = o->len ? rnd() % o->len : 0, take = o->len - from;
                    if (len + take < 8192) {
                        memcpy(buf + len, o->data + from, take);
                        len += take;
                    }
                    break;
                }
                case 4: /* delete a byte */
                    if (len) {
                        size_t at = rnd() % len;
                        memmove(buf + at, buf + at + 1, len - at - 1);
                        len--;
                    }
                    break;
                default: /* random printable run */
                    for (int k = 0; k < 8 && len < 8192; k++)
                        buf[len++] = (char)(32 + rnd() % 95);
                }
            }
            LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
        }
        /* pure random bytes */
        size_t len = rnd() % 64;
        for (size_t k = 0; k < len; k++)
            buf[k] = (char)rnd();
        LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
        runs++;
    }
    printf("%llu inputs in %.1f s, no crash\n", (unsigned long long)runs, seconds);
    for (size_t i = 0; i < n; i++)
        free(corpus[i].data);
    return 0;
}
#endif
