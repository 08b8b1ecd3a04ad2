/*
 * check_print.h — a checker report as `gamefn check` prints it: text for people, or
 * check.json format 1 (docs/REPORT.md) with more fields for programs.
 */
#ifndef GAMEFN_CLI_CHECK_PRINT_H
#define GAMEFN_CLI_CHECK_PRINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "gamefn/check/check.h"

/* The report as check.json format 1: format, checked_at, invariants (the checked counts:
 * name, count, detail, explanation, examples), not_checked (name, why, explanation),
 * totals, notes, broken. New reference. */
json_t *gf_check_report_json(const gf_check_report *r, const gf_check_params *p, const char *notes);

/* Prints the report (JSON when `json`), writes the JSON to `out` too when not NULL (a
 * temporary file renamed into place). Returns the exit code: GF_CLI_OK when every
 * checked count is 0, GF_CLI_VIOLATIONS otherwise, GF_CLI_FAILED when `out` cannot be
 * written. */
int gf_check_print(const gf_check_report *r, const gf_check_params *p, const char *notes, bool json,
                   const char *out);

#endif
