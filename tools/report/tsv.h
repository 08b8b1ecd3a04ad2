/*
 * tsv.h — the run directory's tab-separated files (docs/REPORT.md): a header line of
 * column names, then one row per line. Columns are found by name, so writers may add
 * columns and order them as they like; a spec says which columns the reader needs,
 * their kind and their accepted range.
 *
 * Lines: fields separated by one tab; "\r\n" is accepted; empty lines and lines
 * starting with '#' are skipped. A last line without its '\n' is a write still in
 * progress (or cut by a crash): it is ignored and table->partial_last says so. Any other
 * malformed line rejects the whole file with "NAME:LINE: what" — a report drawn from a
 * file with silently skipped rows would look right and be wrong.
 *
 * Values: a NUM column holds a finite decimal number ([0-9+-.eE] only: no "nan",
 * "inf", hex or spaces) within [min, max]; "-" or an empty field is "not measured" (NAN)
 * where the column allows it. A KEY column holds a token (1..64 of [A-Za-z0-9_.:-]),
 * one of `values` when the spec lists them; a column has at most GF_TSV_MAX_KEYS
 * distinct values (names of modes, regions, consumers: a few, never ids).
 *
 * Ownership: gf_tsv_parse allocates *out; gf_tsv_free frees it (NULL is fine). The
 * parser allocates nothing else and never reads past text[len - 1]. Pure, reentrant.
 */
#ifndef GAMEFN_REPORT_TSV_H
#define GAMEFN_REPORT_TSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"

enum {
    GF_TSV_MAX_COLS = 32,       /* columns in a header */
    GF_TSV_MAX_KEYS = 64,       /* distinct values of one KEY column */
    GF_TSV_NAME_MAX = 64,       /* a column name or a key */
    GF_TSV_LINE_MAX = 4096,     /* bytes in a line */
    GF_TSV_ROWS_MAX = 10000000, /* rows in a file */
};

typedef enum gf_tsv_kind { GF_TSV_NUM, GF_TSV_KEY } gf_tsv_kind;

typedef struct gf_tsv_col {
    const char *name;
    gf_tsv_kind kind;
    bool optional;             /* the column may be missing from the header */
    bool blank_ok;             /* NUM: "-" or "" is allowed (stored as NAN) */
    double min, max;           /* NUM: accepted range, inclusive */
    const char *const *values; /* KEY: allowed values, NULL-terminated; NULL = any token */
} gf_tsv_col;

typedef struct gf_tsv_column {
    char name[GF_TSV_NAME_MAX + 1];
    gf_tsv_kind kind;
    bool present;                                    /* in the file's header */
    double *num;                                     /* NUM: [nrows] (NAN: not measured) */
    uint8_t *key;                                    /* KEY: [nrows], index into keys */
    char keys[GF_TSV_MAX_KEYS][GF_TSV_NAME_MAX + 1]; /* in order of first appearance */
    size_t nkeys;
} gf_tsv_column;

typedef struct gf_tsv_table {
    size_t nrows;
    size_t ncols;
    gf_tsv_column *cols; /* [ncols]: the spec's columns in its order, then `rest` ones */
    bool partial_last;   /* an unterminated last line was ignored */
} gf_tsv_table;

typedef struct gf_tsv_error {
    size_t line; /* 1-based; 0: not about one line */
    char message[256];
} gf_tsv_error;

/* Parses text[0..len) named `name` (for messages). spec[0..nspec) are the columns read;
 * when `rest` is not NULL, every other column of the header is read with rest's kind,
 * range and flags (its name is the header's). GF_ERR_INVALID with err filled on
 * malformed input, GF_ERR_NOMEM. */
gf_err gf_tsv_parse(const char *text, size_t len, const char *name, const gf_tsv_col *spec,
                    size_t nspec, const gf_tsv_col *rest, gf_tsv_table **out, gf_tsv_error *err);
void gf_tsv_free(gf_tsv_table *t);

/* The column named `name`, or NULL. */
const gf_tsv_column *gf_tsv_find(const gf_tsv_table *t, const char *name);

/* The index of `value` among the column's keys, or -1. */
int gf_tsv_key_index(const gf_tsv_column *c, const char *value);

/* true if s[0..len) is a token: 1..GF_TSV_NAME_MAX of [A-Za-z0-9_.:-]. */
bool gf_tsv_token_ok(const char *s, size_t len);

#endif
