/*
 * gamefn/function.h — a function's lifecycle, serverless style.
 *
 * A function declares what it is and how it receives work; its main() is one line:
 *
 *   static const gf_endpoint endpoints[] = {
 *       {.name = "echo", .kind = GF_ENDPOINT_REQUEST, .subject = "gamefn.v1.echo",
 *        .queue_group = "echo", .on_request = echo_handle},
 *   };
 *   static const gf_function echo = {.name = "echo", .version = "0.1.0",
 *       .endpoints = endpoints, .endpoints_len = 1};
 *   int main(int argc, char **argv) { return gf_function_main(&echo, argc, argv); }
 *
 * gf_function_main() then: parses flags (--config, --instance, --check-config,
 * --version, --help), loads the config (GAMEFN_CONFIG or config/gamefn.yaml),
 * connects (retrying until NATS is reachable), provisions the JetStream assets the
 * function needs, calls init, starts every endpoint and $SRV discovery, and waits.
 * On SIGTERM or SIGINT it stops taking new work, lets in-flight handlers finish and
 * acks their messages, drains the connection, calls fini and exits 0 — all within
 * runtime.drain_timeout (+ one fetch expiry for pull endpoints).
 *
 * Three ways of receiving work (ARCHITECTURE.md):
 *  - GF_ENDPOINT_REQUEST: request/reply on a queue group. The handler fills a reply;
 *    a non-OK return sends an error reply (Nats-Service-Error-Code / Nats-Service-Error
 *    headers + a gamefn.v1.Error body) and the process goes on.
 *  - GF_ENDPOINT_PULL: a durable pull consumer (jetstream.consumers in config).
 *    Return GF_OK -> ack; GF_ERR_RETRY (or any unexpected error) -> nak with delay
 *    (the consumer's backoff, else exponential); GF_ERR_PERMANENT or GF_ERR_INVALID ->
 *    term (never redelivered; the dead-letter path sees the advisory). Long handlers
 *    call gf_msg_in_progress(). At most runtime.max_in_flight messages are held.
 *  - GF_ENDPOINT_TICK: every tick_period_ms one instance (the leader, by a lease in
 *    KV bucket lease_bucket) publishes a tick on `subject`; one instance of the queue
 *    group takes each tick and runs on_tick.
 *
 * Threads: request handlers run on nats.c's subscription thread (one per endpoint,
 * so one request at a time per endpoint and instance); each pull endpoint has its
 * own thread; tick handlers run on the tick subscription's thread. Handlers of
 * different endpoints may run concurrently: shared function state needs a lock.
 * The main thread only waits for signals.
 */
#ifndef GAMEFN_FUNCTION_H
#define GAMEFN_FUNCTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/config.h"
#include "gamefn/err.h"

typedef struct gf_fn gf_fn; /* one running instance; owned by gf_function_main */

/* A received message. Everything is borrowed for the duration of the handler. */
typedef struct gf_msg {
    const char *subject;
    const uint8_t *data;
    size_t len;
    natsMsg *nats;          /* for headers; do not ack or destroy it */
    uint64_t stream_seq;    /* pull only */
    uint64_t num_delivered; /* pull only: 1 on the first delivery */
    int64_t timestamp_ns;   /* pull only: when the stream stored it */
} gf_msg;

/* The handler's answer to a request. Set data to a malloc'd buffer (the runtime
 * frees it) or leave it NULL for an empty reply. On a non-OK return, `error`
 * is the text sent to the caller; the wire code is derived from the gf_err
 * (gf_wire_code_from_err) unless `code` names a gamefn.v1.ErrorCode itself (e.g.
 * FAILED_PRECONDITION), and `field` / `retry_after_ms` fill the Error message. */
typedef struct gf_reply {
    void *data;
    size_t len;
    char error[256];
    int code;        /* 0: from the returned gf_err */
    char field[128]; /* offending request field, "" for none */
    uint32_t retry_after_ms;
} gf_reply;

typedef gf_err (*gf_request_fn)(gf_fn *fn, const gf_msg *req, gf_reply *reply);
typedef gf_err (*gf_message_fn)(gf_fn *fn, const gf_msg *msg);
/* A tick as published by the leader. seq restarts at 1 with each leader tenure;
 * lease_token is the tenure's fencing token (grows with every new tenure). */
typedef struct gf_tick {
    int64_t seq;
    int64_t unix_ms;
    uint64_t lease_token;
} gf_tick;

typedef gf_err (*gf_tick_fn)(gf_fn *fn, const gf_tick *tick);

typedef enum gf_endpoint_kind {
    GF_ENDPOINT_REQUEST,
    GF_ENDPOINT_PULL,
    GF_ENDPOINT_TICK,
} gf_endpoint_kind;

typedef struct gf_endpoint {
    const char *name; /* as listed by $SRV.INFO */
    gf_endpoint_kind kind;
    const char *subject;      /* REQUEST: request subject; TICK: tick subject */
    const char *queue_group;  /* REQUEST, TICK */
    const char *stream;       /* PULL: stream and durable consumer name, both */
    const char *consumer;     /*       from config jetstream.consumers */
    int64_t tick_period_ms;   /* TICK */
    const char *lease_bucket; /* TICK: KV bucket holding the ticker's lease */
    gf_request_fn on_request;
    gf_message_fn on_message;
    gf_tick_fn on_tick;
} gf_endpoint;

typedef struct gf_function {
    const char *name;    /* [A-Za-z0-9_-]+ */
    const char *version; /* semver */
    const char *description;
    const gf_cfg_table *config; /* functions.<name> section, or NULL */
    const gf_endpoint *endpoints;
    size_t endpoints_len;
    /* JetStream assets to provision before starting (names in config), NULL-terminated
     * lists or NULL. Consumers of PULL endpoints and lease buckets of TICK endpoints
     * are provisioned automatically. */
    const char *const *streams;
    const char *const *buckets;
    gf_err (*init)(gf_fn *fn); /* after provisioning, before endpoints start; may be NULL */
    void (*fini)(gf_fn *fn);   /* after endpoints stopped; may be NULL */
} gf_function;

/* Runs the function; returns the process exit code (0 after a clean stop,
 * 2 for usage or config errors, 1 for other failures). */
int gf_function_main(const gf_function *def, int argc, char **argv);

/* ---- for handlers, init and fini ---------------------------------------- */
const gf_config *gf_fn_config(const gf_fn *fn);
const void *gf_fn_section(const gf_fn *fn); /* the parsed functions.<name> struct */
const char *gf_fn_instance_id(const gf_fn *fn);
natsConnection *gf_fn_nats(gf_fn *fn);
jsCtx *gf_fn_js(gf_fn *fn);
void gf_fn_set_state(gf_fn *fn, void *state); /* function-owned state, freed by fini */
void *gf_fn_state(const gf_fn *fn);
bool gf_fn_stopping(const gf_fn *fn); /* true once SIGTERM/SIGINT arrived */

/* A header's value, or NULL. */
const char *gf_msg_header(const gf_msg *msg, const char *key);

/* Pull handlers: tell the server the message is still being worked on (resets its
 * ack wait). */
gf_err gf_msg_in_progress(const gf_msg *msg);

#endif
