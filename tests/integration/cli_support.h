/*
 * cli_support.h — running the gamefn CLI from integration tests: a command line with the
 * test's config, its exit code and what it printed (stdout and stderr, one log file), and
 * the printed JSON.
 *
 * Ownership: cli_result.out is malloc'd (cli_result_free); cli_json returns a new
 * reference. Test code: failures fail the calling cmocka test.
 */
#ifndef GAMEFN_TEST_CLI_SUPPORT_H
#define GAMEFN_TEST_CLI_SUPPORT_H

#include <jansson.h>

#include "fn_support.h"

typedef struct cli_result {
    int code; /* exit code; -1 when it did not exit in time */
    char *out;
} cli_result;

/* Runs build/tools/gamefn --config <env's config> <args...> (NULL-terminated) with `env`
 * extra "K=V" entries (may be NULL), waiting up to 60 s. cli_runv takes the arguments as
 * a NULL-terminated array. */
cli_result cli_run(gf_fnenv *e, char *const env[], ...);
cli_result cli_runv(gf_fnenv *e, char *const env[], const char *const *args);
void cli_result_free(cli_result *r);

/* Fails the test unless r exited with `code` and printed `text` (NULL: anything), showing
 * the output; frees r. */
void cli_expect(cli_result *r, int code, const char *text);

/* The JSON value that starts at the output's first line opening one ('{' or '['), after
 * any stderr lines such as progress (fails the test if it does not parse). */
json_t *cli_json(const cli_result *r);
/* The first line of the output that starts with '{' or '[' parsed as JSON (a command's
 * one-line --json answer among stderr lines); fails the test if there is none. */
json_t *cli_json_line(const cli_result *r);

/* A check.json's count of invariant `name`; -1 when it is not in "invariants". */
long long cli_check_count(json_t *check, const char *name);

#endif
