/*
 * fn_support.h — helpers for integration tests that run function binaries against a
 * real nats-server: a config file per test, spawning functions, reading what the
 * test worker recorded, and $SRV queries.
 *
 * Ownership: gf_fnenv owns its server, its temporary directory (config and logs) and
 * its client connection; gf_fnenv_free() stops and removes all of them. Spawned
 * gf_proc are the caller's: gf_proc_cleanup() each one.
 */
#ifndef GAMEFN_TEST_FN_SUPPORT_H
#define GAMEFN_TEST_FN_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "natsd.h"
#include "proc.h"

typedef struct gf_fnenv {
    gf_natsd *natsd;           /* single node, or NULL */
    gf_natsd_cluster *cluster; /* or a cluster */
    char dir[256];             /* temporary: config and function logs */
    char config_path[320];
    natsConnection *nc; /* the test's own client, SendAsap */
    jsCtx *js;
} gf_fnenv;

/* Starts a server, writes a config whose jetstream section holds TEST_JOBS
 * (test.jobs), TEST_RESULTS (test.results.>), consumer TEST_JOBS/worker (ack_wait
 * 2s, max_deliver 5) and bucket TEST_LEASES, plus `functions_yaml` (the text of the
 * `functions:` section's entries, indented by two spaces; may be NULL). Connects. */
int gf_fnenv_start(gf_fnenv *env, const char *functions_yaml);

/* Everything a test may change in the servers and the config; NULL, 0 and false keep the
 * default. */
typedef struct gf_fnenv_opts {
    int nodes;                   /* 0 or 1: a single server; 3 or 5: a cluster */
    const char *server_config;   /* appended to every server's config (mappings, accounts) */
    bool no_jetstream;           /* servers without JetStream */
    const char *nats;            /* more entries of the nats section, indented by two spaces */
    const char *runtime;         /* the runtime section's body, keys indented by two spaces, in
                                    place of the defaults (drain_timeout 5s, fetch_batch 8, ...) */
    const char *worker;          /* settings of consumer TEST_JOBS/worker, indented by six */
    const char *streams;         /* more entries of jetstream.streams ("    - name: ...") */
    const char *consumers;       /* more entries of jetstream.consumers */
    const char *buckets;         /* more entries of jetstream.buckets */
    const char *functions;       /* the functions section's body */
    bool no_client;              /* do not connect the test's own client */
    const char *client_user;     /* the test's client connects as this user (with */
    const char *client_password; /* this password); NULL: without credentials */
} gf_fnenv_opts;

/* The text of the shipped deploy/nats/accounts.conf (a static buffer, the same on every
 * call), with every password variable it reads ($GAMEFN_<USER>_PASSWORD) set in this
 * process's environment to "pw-<USER>", for the nats-server started next to read. */
const char *gf_fnenv_shipped_accounts(void);

/* The password gf_fnenv_shipped_accounts gives shipped user `user`: "pw-<USER>". */
void gf_fnenv_shipped_password(const char *user, char *out, size_t size);

/* The two variables that log a spawned process in as shipped user `user`:
 * GAMEFN_NATS_USER=<user> and GAMEFN_NATS_PASSWORD=pw-<USER>. */
typedef struct gf_fnenv_login {
    char user[96], password[112];
} gf_fnenv_login;
void gf_fnenv_shipped_login(const char *user, gf_fnenv_login *out);

/* A connection to env's (single) server as `user`, replies under inbox_prefix (the
 * shipped users' own: "_INBOX.gw" for the gateway, "_INBOX.gs" for game servers). */
natsConnection *gf_fnenv_connect_as(gf_fnenv *env, const char *user, const char *password,
                                    const char *inbox_prefix);

/* How many lines of env's (single) server's log contain `needle` (e.g. "Violation"). */
int gf_fnenv_server_log_count(gf_fnenv *env, const char *needle);

/* The same with options: a bucket `leases` exists too (for partitioned groups). */
int gf_fnenv_start_opts(gf_fnenv *env, const gf_fnenv_opts *o);

/* Same on a cluster of `nodes` servers; streams and buckets get replicas = nodes, and
 * the config lists every node. */
int gf_fnenv_start_cluster(gf_fnenv *env, int nodes, const char *functions_yaml);
void gf_fnenv_free(gf_fnenv *env);

/* Path of a built binary, e.g. "functions/echo/gamefn-echo" (from GAMEFN_BUILD_DIR). */
const char *gf_fnenv_binary(const char *relative, char *buf, size_t size);

/* Spawns `relative` with --config and --instance `instance`; `env` extra "K=V" (may be
 * NULL). The log goes to <dir>/<instance>.log. */
int gf_fnenv_spawn(gf_fnenv *env, gf_proc *p, const char *relative, const char *instance,
                   char *const extra_env[]);

/* gf_fnenv_spawn, then waits (10 s) until `$SRV.PING.<name>.<instance>` answers, i.e.
 * every endpoint takes work. Returns 0, or -1 (the log is dumped) if it never does. */
int gf_fnenv_spawn_ready(gf_fnenv *env, gf_proc *p, const char *relative, const char *name,
                         const char *instance, char *const extra_env[]);

/* Creates stream `name` on `subject` (file storage, defaults) through `js`. */
natsStatus gf_fnenv_add_stream(jsCtx *js, const char *name, const char *subject);

/* Fills stream `stream` (a bucket's is "KV_<bucket>"), which must be discard new
 * (NATS_ILLEGAL_STATE otherwise): its max_bytes becomes what it holds, so every new
 * write is refused (10077) and nothing stored is lost; full = false makes it unlimited
 * again. */
natsStatus gf_fnenv_stream_full(gf_fnenv *env, const char *stream, bool full);

/* SIGTERM, then waits up to timeout_ms: true when the process exited with 0. Otherwise
 * prints the end of its log (the reason a test then fails) and returns false. */
bool gf_fnenv_stop(gf_proc *p, int timeout_ms);

/* Waits until `$SRV.PING.<name>.<id>` answers (the instance is up). */
bool gf_fnenv_wait_ping(gf_fnenv *env, const char *name, const char *id, int timeout_ms);
/* The same for a process this test spawned: when it does not answer, says whether it is
 * still running or how it ended, and shows the end of its log. */
bool gf_fnenv_wait_ready(gf_fnenv *env, gf_proc *p, const char *name, const char *instance,
                         int timeout_ms);

/* One request to a $SRV subject; *json is malloc'd text (caller frees). */
int gf_fnenv_srv(gf_fnenv *env, const char *subject, char **json);

/* The health $SRV.INFO.<name>.<id> reports: 1 when its metadata says healthy "true", 0
 * when "false" (the reason, metadata unhealthy, is then copied into `why` when not NULL),
 * -1 when INFO does not answer. */
int gf_fnenv_health(gf_fnenv *env, const char *name, const char *id, char *why, size_t why_size);

/* For gf_fnenv_eventually (arg: a gf_fnenv_health_want): with `reason` NULL, the instance
 * is healthy (PING answers, INFO says healthy); otherwise it is unhealthy (no PING
 * answer) and INFO's reason contains `reason`. */
typedef struct gf_fnenv_health_want {
    const char *name, *id;
    const char *reason;
} gf_fnenv_health_want;
bool gf_fnenv_health_is(gf_fnenv *env, void *want);

/* Every message in TEST_RESULTS on `subject`, in stream order, as NUL-terminated lines
 * into a malloc'd array (caller frees with gf_fnenv_lines_free). */
typedef struct gf_lines {
    char **lines;
    size_t count;
} gf_lines;
int gf_fnenv_results(gf_fnenv *env, const char *subject, gf_lines *out);
void gf_fnenv_lines_free(gf_lines *l);

/* Publishes a job to TEST_JOBS (synchronously, acked). */
int gf_fnenv_publish_job(gf_fnenv *env, const char *job);

/* Publishes jobs "j<from>" .. "j<to - 1>", each followed by " <mode>" when mode is not
 * NULL (the test worker's modes: "nak-once", "term", "long", "fail"). */
int gf_fnenv_publish_jobs(gf_fnenv *env, int from, int to, const char *mode);

/* For gf_fnenv_eventually: consumer TEST_JOBS/worker has nothing pending and nothing
 * unacked (arg unused). */
bool gf_fnenv_jobs_settled(gf_fnenv *env, void *arg);

/* Lines of p's log that contain `needle`; -1 if the log cannot be read. */
int gf_fnenv_log_count(const gf_proc *p, const char *needle);

/* Polls p's log every 50 ms until a line contains `needle` or timeout_ms passes. */
bool gf_fnenv_wait_log(const gf_proc *p, const char *needle, int timeout_ms);

/* Polls `pred` every 50 ms until it returns true or timeout_ms passes. */
bool gf_fnenv_eventually(bool (*pred)(gf_fnenv *env, void *arg), gf_fnenv *env, void *arg,
                         int timeout_ms);

#endif
