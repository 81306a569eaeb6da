/* number.h — omniprof's one number parser, for command-line options, OMNIPROF_* settings and
 * input files alike.
 *
 * Accepted text: decimal integers (an optional sign, digits; 0x-prefixed hex for integers),
 * decimal reals ("1", "0.5", ".5", "2e-3"). Refused, each with its own reason: empty text,
 * trailing characters, NaN and infinity in any spelling, hex floats, a value that does not fit
 * the type (never wrapped or saturated), a minus sign on an unsigned value, and a value outside
 * the valid range of what it sets. Leading zeros are decimal ("010" is ten, never octal).
 *
 * Ranges are written in interval notation, "[0,60000]", "(0,100000]" ("(" and ")" exclude the
 * bound); they are the CHOICES column of the numeric rows of settings.def, and messages print
 * them as written.
 *
 * Id lists ("0,2,5-8": thread indices, cores, GPUs; "[1, [3-5]]": kernel iterations) are
 * non-negative decimal integers and ranges A-B with A <= B, separated by commas, blanks or
 * brackets; "all" and "none" are words of their own (op_idlist_validate/has only). */
#ifndef OMNIPROF_COMMON_NUMBER_H
#define OMNIPROF_COMMON_NUMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Result codes (0 = the text is a number of that type). */
enum {
    OP_NUM_OK = 0,
    OP_NUM_EMPTY = -1,      /* no text */
    OP_NUM_SYNTAX = -2,     /* not a number */
    OP_NUM_NOT_FINITE = -3, /* nan, inf, infinity */
    OP_NUM_OVERFLOW = -4,   /* too large (or too small) for the type */
    OP_NUM_NEGATIVE = -5,   /* a sign on an unsigned value */
    OP_NUM_RANGE = -6,      /* outside the valid range */
};

int op_num_double(const char *text, double *out);
int op_num_i64(const char *text, int64_t *out);
int op_num_u64(const char *text, uint64_t *out);
/* The reason for a result code, e.g. "NaN and infinity are not numbers here". */
const char *op_num_reason(int code);

typedef struct op_num_range {
    double lo, hi;
    bool lo_open, hi_open; /* "(": lo itself is outside */
} op_num_range;

/* Parses "[lo,hi]" / "(lo,hi]" / ... Returns 0, or -1 for a malformed spec, a reversed range
 * (lo > hi) or an empty one ("(1,1]", "[1,1)"). */
int op_num_range_parse(const char *spec, op_num_range *out);
bool op_num_range_has(const op_num_range *r, double v);

typedef enum op_num_type { OP_NUM_TYPE_INT, OP_NUM_TYPE_UINT, OP_NUM_TYPE_DOUBLE } op_num_type;

/* Parse `text` as `type` and check it against `range` (a spec as above; NULL or "" = any
 * value of the type). On success returns 0 and the value in *out (converted to double for
 * the range check; integers also in *i / *u when not NULL). On failure returns a result code
 * and writes "expected <what> in <range> (<reason>)" into why. */
int op_num_parse_checked(const char *text, op_num_type type, const char *range, double *out, int64_t *i, uint64_t *u,
                         char *why, size_t whylen);

/* Durations in seconds, as the duration options and settings take them (attach --duration,
 * the *_DELAY and *_DURATION settings, collection periods): a finite number from 0 (or above 0
 * when !zero_ok) to a year. "inf" is refused like any other non-number: "until the end" is
 * said by leaving the duration out (or 0 where a setting documents it). Returns 0, or a result
 * code with "expected a number in (0,31536000] (<reason>)" in why. */
#define OP_NUM_SECONDS_MAX 31536000.0
int op_num_seconds(const char *text, bool zero_ok, double *out, char *why, size_t whylen);

/* Id lists. validate: 0 or -1 with the reason in why (the offending item named). */
int op_idlist_validate(const char *text, char *why, size_t whylen);
/* Is `value` in the list? "" and "all" hold everything, "none" nothing; a list of separators
 * only ("[ ]", ",") is empty, as "" (op_idlist_parse gives it no item). The list must have
 * passed op_idlist_validate (an invalid one holds nothing). */
bool op_idlist_has(const char *text, uint64_t value);

typedef struct op_id_range {
    uint64_t lo, hi;
} op_id_range;

/* The items of an id list (no "all"/"none"), each at least min_id. Returns 0 and *n items, or
 * -1 with the reason in why (a bad item, a reversed range, more than max items). */
int op_idlist_parse(const char *text, uint64_t min_id, op_id_range *out, size_t max, size_t *n, char *why,
                    size_t whylen);

/* A size in bytes for a message, in the largest binary unit it reaches: "512 B", "1.50 KiB",
 * "12.3 MiB", "1.20 GiB", "2.00 TiB" (three significant digits). Returns buf (n >= 16 holds
 * every value). */
#define OP_FMT_BYTES_LEN 16
const char *op_fmt_bytes(char *buf, size_t n, uint64_t bytes);

#endif /* OMNIPROF_COMMON_NUMBER_H */
