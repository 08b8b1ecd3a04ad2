/*
 * config_value.h — private: one scalar's text -> the value of a field, its bounds,
 * and the words used for types and ranges in errors and in the reference.
 *
 * Used by the walker (file values and defaults), by the environment overrides and by
 * the reference printer, so a value is read and described the same way everywhere.
 */
#ifndef GAMEFN_CONFIG_VALUE_H
#define GAMEFN_CONFIG_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/config.h"

typedef union cfg_scalar {
    int64_t i; /* INT, DURATION, SIZE */
    double d;  /* DOUBLE */
    bool b;    /* BOOL */
    int e;     /* ENUM */
} cfg_scalar;

/* INT, DOUBLE, BOOL, DURATION, SIZE, ENUM (and the items of a DURATION_LIST, read as
 * DURATION). Checks syntax and the field's bounds. On failure writes why. */
bool gf__cfg_value_parse(const gf_cfg_field *f, gf_cfg_type type, const char *text, cfg_scalar *out,
                         char *why, size_t why_size);

/* Stores v at base + f->offset in the field's C type. */
void gf__cfg_value_store(const gf_cfg_field *f, void *base, const cfg_scalar *v);

/* Bounds as words: "1..5", "1ms..1d", "at least 1", "1..64 entries"; "" if unbounded. */
void gf__cfg_value_range_text(const gf_cfg_field *f, char *buf, size_t size);

/* "string", "integer", "duration", "list of strings", ... */
const char *gf__cfg_value_type_name(gf_cfg_type type);

bool gf__cfg_value_is_scalar(gf_cfg_type type);
bool gf__cfg_value_is_list(gf_cfg_type type);

/* Whether f's bounds allow v (v as a double; for lists, the length). */
bool gf__cfg_value_in_bounds(const gf_cfg_field *f, double v);

#endif
