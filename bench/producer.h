/*
 * bench/producer.h — the event producer's throughput (gamefn/producer.h) against the
 * raw async publish with Msg-Id of the same events on the same server in the same
 * run. `gamefn-bench producer` prints it; `gamefn-bench events` (the event log end
 * to end) may call gf_bench_producer_measure on its own server.
 *
 * The server must have the event subject mapping (docs/PROTOCOL.md §9) and a stream
 * on gamefn.v1.evp.> named `stream`; each phase starts by purging it and ends by
 * checking it holds exactly `count` messages (no figure otherwise).
 *
 * Phases, in order:
 *   raw       js_PublishAsync of the producer's encoded event bytes to the producer's
 *             subjects, a unique Nats-Msg-Id each, window = W: what NATS alone does;
 *   raw-headers  the same with the headers Gamefn-Source and Gamefn-Source-Seq
 *             (js_PublishMsgAsync): what the wire format itself costs;
 *   producer  gf_producer_emit of `count` events (fsync interval, own connection,
 *             window W) from one thread, timed from the first emit until
 *             gf_producer_flush returned (every event acknowledged); each emit call is
 *             timed too (the game loop's cost);
 *   borrowed  the same on the raw phase's connection (nats.c's default options, no
 *             SendAsap): the library's own cost apart from the connection's;
 *   always    optionally the same with fsync = always, `always_count` events.
 */
#ifndef GAMEFN_BENCH_PRODUCER_H
#define GAMEFN_BENCH_PRODUCER_H

#include <stdbool.h>
#include <stdint.h>

#include <nats/nats.h>

typedef struct gf_bench_producer_opts {
    long long count;        /* events per phase */
    int payload;            /* bytes of each encoded GameEvent, about */
    uint32_t window;        /* W, and the raw phase's MaxPending */
    int players;            /* distinct player ids */
    long long always_count; /* 0 = no fsync=always phase */
    const char *tmpdir;     /* where the spool goes (removed after) */
} gf_bench_producer_opts;

typedef struct gf_bench_producer_result {
    int event_bytes;          /* encoded size of one event, as published */
    double raw_per_s;         /* raw async publish with Msg-Id */
    double raw_headers_per_s; /* the same with the producer's two headers */
    long long raw_stalls;     /* js_PublishAsync calls refused for a full window */
    double producer_per_s;
    double ratio;          /* producer_per_s / raw_per_s */
    double borrowed_per_s; /* the producer on the raw phase's connection */
    double borrowed_ratio; /* borrowed_per_s / raw_per_s */
    double emit_p50_us, emit_p99_us, emit_p999_us, emit_max_us;
    double always_per_s; /* 0 when not measured */
    double always_emit_p50_us, always_emit_p99_us;
} gf_bench_producer_result;

/* url: a server with the mapping; stream: the stream on gamefn.v1.evp.>. 0, or -1 with
 * the reason on stderr (then no figure is valid). */
int gf_bench_producer_measure(const char *url, const char *stream, const gf_bench_producer_opts *o,
                              gf_bench_producer_result *r);

#endif
