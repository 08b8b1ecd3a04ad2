/*
 * bench/raw.h — private to `gamefn-bench raw`: options, results and the phases.
 *
 * raw.c parses flags, provides the server (its own single node through
 * support/natsd, or --url), runs the phases in order on one connection and prints the
 * figures. Each phase measures one baseline operation, verifies what it measured
 * (acks, counts, revisions) and returns -1 with a message on stderr when anything
 * does not add up: a figure is only printed for work that provably happened.
 *
 * Threads: phases run on the main thread; nats.c ack/message callbacks run on
 * nats.c threads and share only the atomics or mutex-guarded state of their phase.
 */
#ifndef GAMEFN_BENCH_RAW_H
#define GAMEFN_BENCH_RAW_H

#include <nats/nats.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct gf_raw_opts {
    const char *url; /* NULL: start an own nats-server */
    int payload;     /* bytes per message, >= 8 (the first 8 carry a sequence) */
    double seconds;  /* time bound per phase; 0 = none (then count is required) */
    long long count; /* operation bound per phase; 0 = none */
    int max_pending; /* async publish window */
    int batch;       /* pull fetch batch */
    int keys;        /* distinct keys of the pipelined KV CAS phase */
    bool json;
    char run_id[24]; /* makes stream, bucket and subject names unique per run */
} gf_raw_opts;

typedef struct gf_raw_rate {
    long long count;
    double secs;
} gf_raw_rate;

typedef struct gf_raw_latency {
    long long count;
    double p50_us, p99_us, p999_us, max_us;
} gf_raw_latency;

typedef struct gf_raw_results {
    char server_version[32];
    char stream[48];
    char subject[64];              /* subject prefix the stream captures, "<x>.>" */
    gf_raw_rate publish;           /* async JetStream publish with unique Msg-Id */
    long long publish_stalls;      /* js_PublishAsync calls that hit MaxPending */
    gf_raw_rate fetch;             /* pull fetch + per-message ack */
    gf_raw_rate kv_sync;           /* KV CAS, one in flight */
    gf_raw_rate kv_pipe;           /* KV CAS, one in flight per key, many keys */
    long long kv_pipe_conflicts;   /* during the timed run; must be 0 */
    gf_raw_latency reqrep;         /* SendAsap on both sides */
    gf_raw_latency reqrep_default; /* default options, for comparison */

    /* The pipelined CAS again, each with a unique Msg-Id (what the publisher sends). */
    gf_raw_rate kv_pipe_msgid;
    long long kv_pipe_msgid_conflicts;
    /* The same work through the runtime's publisher (raw_pub.c). */
    gf_raw_rate publish_reliable; /* publish's, through gf_publish_send */
    gf_raw_rate kv_cas_async;     /* kv_pipe's, through gf_publish_cas_send */
    char rel_stream[48], rel_bucket[48];
} gf_raw_results;

/* gf_clock_mono_ns() in seconds, for phase timing. */
double gf_raw_now(void);

/* true once a phase started at t0 has used its time or count budget. */
bool gf_raw_done(const gf_raw_opts *o, double t0, long long done);

/* Payload of `len` (>= 8) bytes whose first 8 carry `index`; the rest is filler. */
void gf_raw_fill_payload(char *buf, int len, uint64_t index);

/* An R1 file stream on one subject (filter); 0, or -1 with a message on stderr. */
int gf_raw_create_stream(jsCtx *js, const char *name, const char *subject);

/* Prints a progress line to stderr about once a second. */
void gf_raw_progress(const char *phase, double t0, long long done, double *last);

/* The phases. nc is connected with default options. 0 ok, -1 failed (why on stderr). */
int gf_raw_publish(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r);
int gf_raw_fetch(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r);
int gf_raw_kv_sync(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r);
int gf_raw_kv_pipelined(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r);
int gf_raw_kv_pipelined_msgid(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r);
/* The same work through the runtime's publisher (raw_pub.c). */
int gf_raw_publish_reliable(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r);
int gf_raw_kv_cas_async(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r);
/* Opens its own requester and responder connections to url. */
int gf_raw_reqrep(const char *url, const gf_raw_opts *o, gf_raw_results *r);

/* Cleanup for --url runs (an own server is simply thrown away). */
void gf_raw_js_cleanup(natsConnection *nc, const gf_raw_results *r);
void gf_raw_kv_cleanup(natsConnection *nc, const gf_raw_opts *o);
void gf_raw_pub_cleanup(natsConnection *nc, const gf_raw_results *r);

#endif
