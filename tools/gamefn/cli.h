/*
 * cli.h — the gamefn operator CLI: one row per command in main.c's table, each command
 * in its own file, and what every command shares (cli_util.c): exit codes, connecting
 * with a clear error, requests to a function, JSON output.
 *
 * A command gets argv with argv[0] = its name and parses its own options with
 * getopt_long (optind reset to 0 first). `--help` / `-h` anywhere among a command's
 * arguments prints the row's help text and exits 0 before the command runs. Every
 * command returns an exit code from the table below (docs/OPERATIONS.md, "The gamefn
 * CLI", documents it).
 *
 * Ownership: main owns the gf_cli and its config; commands borrow them.
 */
#ifndef GAMEFN_CLI_H
#define GAMEFN_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include <nats/nats.h>
#include <protobuf-c/protobuf-c.h>

#include "gamefn/config.h"
#include "gamefn/conn.h"

/* Exit codes of every command. */
enum {
    GF_CLI_OK = 0,          /* done; check: every invariant holds */
    GF_CLI_VIOLATIONS = 1,  /* check: at least one invariant count is not 0 */
    GF_CLI_USAGE = 2,       /* bad option or argument, unknown command, bad config file */
    GF_CLI_UNREACHABLE = 3, /* cannot connect to NATS (down, refused login, no JetStream);
                               check: a stream copy read stayed behind its leader */
    GF_CLI_NOT_FOUND = 4,   /* an unknown name: ticket, queue, stream, function, file */
    GF_CLI_TIMEOUT = 5,     /* no answer in time; watch: no terminal state in time */
    GF_CLI_NO_SERVICE = 6,  /* no function instance serves the request (no responders) */
    GF_CLI_REFUSED = 7,     /* the function refused the request, or a permission is missing */
    GF_CLI_FAILED = 8,      /* anything else: a read that broke off, out of memory */
};

typedef struct gf_cli {
    const char *config_path;
    gf_nats_config nats;        /* the connection's settings (cfg->nats with the overrides) */
    gf_config *cfg;             /* loaded before the command runs (see gf_cli_command.config) */
    const char *inbox_prefix;   /* --inbox-prefix; NULL: the config's nats.inbox_prefix */
    int64_t connect_timeout_ms; /* --connect-timeout: give up connecting after this */
} gf_cli;

typedef enum gf_cli_config {
    GF_CLI_CONFIG_NONE = 0, /* runs without a config file */
    GF_CLI_CONFIG_RUNTIME,  /* nats, runtime and jetstream sections */
    GF_CLI_CONFIG_ALL,      /* and every functions.<name> section this build knows */
} gf_cli_config;

typedef struct gf_cli_command {
    const char *name;
    const char *summary; /* one line for `gamefn --help` */
    const char *help;    /* the whole `gamefn <name> --help` text */
    int (*run)(gf_cli *cli, int argc, char **argv);
    gf_cli_config config;
} gf_cli_command;

/* ---- the commands (one file each) ---- */
extern const char gf_cli_check_config_help[], gf_cli_provision_help[], gf_cli_services_help[],
    gf_cli_status_help[], gf_cli_ticket_help[], gf_cli_check_help[], gf_cli_emit_help[];
int gf_cli_check_config(gf_cli *cli, int argc, char **argv);
int gf_cli_provision(gf_cli *cli, int argc, char **argv);
int gf_cli_services(gf_cli *cli, int argc, char **argv);
int gf_cli_status(gf_cli *cli, int argc, char **argv);
int gf_cli_ticket(gf_cli *cli, int argc, char **argv);
int gf_cli_check(gf_cli *cli, int argc, char **argv);
int gf_cli_emit(gf_cli *cli, int argc, char **argv);
/* The event log (docs/EVENTS.md): leaderboards, dead letters, lag and gaps, a player's
 * history, analytics, crashes. */
extern const char gf_cli_lb_help[], gf_cli_dlq_help[], gf_cli_lag_help[], gf_cli_history_help[],
    gf_cli_analytics_help[], gf_cli_crashes_help[];
int gf_cli_lb(gf_cli *cli, int argc, char **argv);
int gf_cli_dlq(gf_cli *cli, int argc, char **argv);
int gf_cli_lag(gf_cli *cli, int argc, char **argv);
int gf_cli_history(gf_cli *cli, int argc, char **argv);
int gf_cli_analytics(gf_cli *cli, int argc, char **argv);
int gf_cli_crashes(gf_cli *cli, int argc, char **argv);
/* keys_cmd.c: need no config (verify-token reads `config_path` only for --keys). */
extern const char gf_cli_keygen_help[], gf_cli_verify_token_help[];
int gf_cli_keygen(int argc, char **argv);
int gf_cli_verify_token(const char *config_path, int argc, char **argv);

/* The config sections of every function this build knows (functions.c); static. */
const gf_config_section *gf_cli_functions(size_t *n);

/* Prints a warning on stderr for each limit of the retention stream (functions.lag:
 * retention_stream, peak_events_per_s, outage, avg_event_size) that cannot hold the
 * configured outage, and appends its text to `texts` (a JSON array; may be NULL);
 * returns how many. Nothing when the stream is not in the config (lag_cmd.c; used by
 * check-config and provision). */
size_t gf_cli_retention_warnings(const gf_config *cfg, json_t *texts);

/* ---- shared (cli_util.c) ---- */

/* Connects (giving up after cli->connect_timeout_ms, with cli->inbox_prefix). On failure
 * prints "gamefn <cmd>: cannot connect to NATS at <servers>: <why>" and returns
 * GF_CLI_UNREACHABLE (or GF_CLI_USAGE for a bad option such as a missing credentials
 * file). */
int gf_cli_connect(gf_cli *cli, const char *cmd, gf_conn **out);

/* A request to a function: body = req packed; waits timeout_ms. GF_CLI_OK with the reply
 * decoded as `desc` in *out (protobuf_c_message_free_unpacked), or an exit code with the
 * reason printed as "gamefn <cmd>: ...": NO_SERVICE (no responders), TIMEOUT, NOT_FOUND
 * (error reply NOT_FOUND, or INVALID_ARGUMENT naming an unknown name in `field`),
 * REFUSED (any other error reply). `code`/`field` (may be NULL) get the error reply's
 * code and field. */
int gf_cli_request(natsConnection *nc, const char *cmd, const char *subject,
                   const ProtobufCMessage *req, const ProtobufCMessageDescriptor *desc,
                   int64_t timeout_ms, ProtobufCMessage **out, int *code, char *field,
                   size_t field_size);

/* gf_cli_request on a connection of its own (gf_cli_connect, closed after): for the
 * commands that ask one question. The same exit codes, plus gf_cli_connect's. */
int gf_cli_ask(gf_cli *cli, const char *cmd, const char *subject, const ProtobufCMessage *req,
               const ProtobufCMessageDescriptor *desc, int64_t timeout_ms, ProtobufCMessage **out);

/* Every answer to a $SRV request on `subject` (e.g. "$SRV.STATS"), each parsed, until
 * wait_ms pass without a new one. A JSON array (new reference; answers that are not JSON
 * objects are left out). */
json_t *gf_cli_srv_collect(natsConnection *nc, const char *subject, int64_t wait_ms);

/* Prints j to stdout, indented, and a newline (compact with one object per line when
 * `compact`). Steals the reference. */
void gf_cli_json_print(json_t *j, bool compact);

/* "12,345" */
char *gf_cli_thousands(uint64_t n, char *buf, size_t size);
/* Unix ms as RFC 3339 with milliseconds ("-" for 0). */
char *gf_cli_time(int64_t unix_ms, char *buf, size_t size);

/* A duration option ("250ms", "5s", "2m") into *ms, within [min, max]; prints the error
 * and returns false otherwise. */
bool gf_cli_duration(const char *cmd, const char *opt, const char *text, int64_t min, int64_t max,
                     int64_t *ms);
/* An integer option within [min, max] into *out; prints the error and returns false
 * otherwise. */
bool gf_cli_integer(const char *cmd, const char *opt, const char *text, long long min,
                    long long max, long long *out);
/* A point in time: RFC 3339 ("2026-11-29T15:00:00Z") or a duration before now ("2h"),
 * into Unix ms; prints the error and returns false otherwise. */
bool gf_cli_since(const char *cmd, const char *opt, const char *text, int64_t *unix_ms);

/* A failed JetStream API call on `what` ("stream DLQ") as an exit code, the reason printed
 * as "gamefn <cmd>: <what>: ...": NOT_FOUND (no such stream, consumer or message),
 * TIMEOUT (the API did not answer: JetStream not enabled or not permitted), REFUSED
 * (refused, no permission), FAILED (anything else). */
int gf_cli_js_error(const char *cmd, const char *what, natsStatus s, jsErrCode jerr);

/* Unknown option or missing argument: the error line, then "see gamefn <cmd> --help". */
int gf_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
