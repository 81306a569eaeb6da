/* json_parse.h — a small, strict JSON reader (RFC 8259) into a tree of values, for the files a
 * user hands omniprof (`omniprof run -i FILE.json`, configuration files).
 *
 * The whole text is parsed before anything is returned: a value is either a complete tree or
 * NULL with a message "line L, column C: what was expected". Limits that keep hostile input
 * bounded: nesting depth OP_JSON_MAX_DEPTH, strings without NUL characters (\u0000 is refused,
 * so every string is a C string), surrogate pairs checked and joined into UTF-8. Numbers keep
 * the text as written (so `1e300` reaches the setting's own range check unchanged) and their
 * value as a double. Object members keep their order; duplicate keys are kept too (the caller
 * decides; op_json_get returns the first). */
#ifndef OMNIPROF_COMMON_JSON_PARSE_H
#define OMNIPROF_COMMON_JSON_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#define OP_JSON_MAX_DEPTH 64

typedef enum op_json_type {
    OP_JSON_NULL,
    OP_JSON_BOOL,
    OP_JSON_NUMBER,
    OP_JSON_STRING,
    OP_JSON_ARRAY,
    OP_JSON_OBJECT,
} op_json_type;

typedef struct op_json op_json;
struct op_json {
    op_json_type type;
    bool boolean;       /* BOOL */
    double number;      /* NUMBER */
    char *text;         /* STRING: the value (UTF-8); NUMBER: as written; BOOL: "true"/"false" */
    char *key;          /* a member of an object: its key; else NULL */
    op_json *child;     /* ARRAY, OBJECT: the first element or member */
    op_json *last;      /* ARRAY, OBJECT: the last one (appending is O(1): a list of 50,000 jobs) */
    op_json *next;      /* the next element or member of the parent */
    size_t n_children;  /* ARRAY, OBJECT */
    int line, column;   /* where the value starts (1-based), for messages */
};

/* Parse `len` bytes of `text` (one value, surrounded by white space only). Returns the tree
 * (free with op_json_free), or NULL with a message in err. */
op_json *op_json_parse(const char *text, size_t len, char *err, size_t errlen);
void op_json_free(op_json *value);

/* The first member of an object named `key`, or NULL. */
const op_json *op_json_get(const op_json *object, const char *key);
/* "null", "boolean", "number", "string", "array", "object". */
const char *op_json_type_name(op_json_type type);

/* Tree building, shared with readers of other formats that produce the same tree (YAML).
 * op_json_new returns NULL when out of memory; op_json_append adds `item` as the last child. */
op_json *op_json_new(op_json_type type, const char *text, int line, int column);
void op_json_append(op_json *parent, op_json *item);

#endif /* OMNIPROF_COMMON_JSON_PARSE_H */
