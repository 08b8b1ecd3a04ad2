/*
 * bench_support.h — running `gamefn-bench` from a test: where the binary is, its output
 * (stdout and stderr in one log), the JSON line it ends with, and a figure of it.
 *
 * The tests assert what a run must show (exit status, counts that must be zero, options
 * echoed back), never a rate: performance is the benchmark's to report, not a test's.
 */
#ifndef GAMEFN_TEST_BENCH_SUPPORT_H
#define GAMEFN_TEST_BENCH_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "proc.h"

/* "<GAMEFN_BUILD_DIR or build>/bench/gamefn-bench" into buf. */
void bench_binary(char *buf, size_t size);

/* Starts `gamefn-bench <args...>` (args NULL-terminated, without the binary) with its
 * output into log (a mkstemp template, rewritten). Fails the test if it cannot start. */
void bench_spawn(gf_proc *p, char *log, char *const args[]);

/* The output so far, NUL-terminated into buf. */
const char *bench_output(const gf_proc *p, char *buf, size_t size);

/* Polls the output until it holds `needle` (true) or timeout_ms passes. */
bool bench_wait_output(const gf_proc *p, const char *needle, int timeout_ms, char *buf,
                       size_t size);

/* Waits up to timeout_ms for the bench to end, its output into buf; fails the test (with
 * the output) unless it exited 0 and ended with a JSON line, which it returns (the
 * caller decrefs). */
json_t *bench_finish(gf_proc *p, int timeout_ms, char *buf, size_t size);

/* The JSON object of the output's last line (it nests only flat objects); NULL if none. */
json_t *bench_json_line(const char *out);

/* `gamefn-bench <bench> <option> <value>` must end at once (10 s) with exit status 2, its
 * output holding `want` and the usage text. */
void bench_expect_usage_error(const char *bench, const char *option, const char *value,
                              const char *want);

/* j[key] as a number; fails the test when it is missing or not a number. */
double bench_number(const json_t *j, const char *key);

#endif
