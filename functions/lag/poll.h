/*
 * poll.h — one look at every durable consumer of some streams: the server's consumer
 * info, the stream's limits and state, and the stored time of each consumer's oldest
 * unacked event. Used by the lag monitor's leader every interval and by `gamefn lag
 * --direct` (no monitor needed).
 *
 * Per stream: one stream info and one consumer list (js_Consumers: every consumer's
 * info in one API call, paged by nats.c). Ephemeral consumers (ordered consumers, KV
 * watchers, the gap observer itself) are skipped: their position is nobody's state.
 * Per consumer with anything unacked: one $JS.API.STREAM.MSG.GET with next_by_subj =
 * its filter from ack_floor + 1 — the first event above the floor on its subjects is
 * the oldest one not yet acknowledged (the floor only moves over acked events), so its
 * stored time is the "oldest unacked" age.
 *
 * Cost: nats-server 2.9.10 computes num_pending of a filtered consumer by scanning
 * (~11 ms per consumer info with many pending events, docs/NATS-FACTS.md), so a poll of
 * 64 lagging partition consumers costs the server about 0.7 s; the monitor polls every
 * `interval` (default 10 s) from one leader only. lag_poll reports its own duration.
 *
 * Ownership: lag_poll fills a caller-owned lag_poll_result; lag_poll_free releases its
 * arrays. Threads: one poll per jsCtx at a time (nats.c's calls are thread-safe, the
 * result is not shared).
 */
#ifndef GAMEFN_LAG_POLL_H
#define GAMEFN_LAG_POLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"
#include "gamefn/v1/lag.pb-c.h"
#include "level.h"

enum { LAG_POLL_ERRORS_MAX = 16 };

typedef struct lag_sample {
    char stream[256];
    char consumer[256];
    char filter[512];
    uint64_t pending, ack_pending, redelivered;
    uint64_t ack_floor;
    int64_t oldest_unix_ms; /* 0 = nothing unacked */
    lag_input in;           /* what lag_classify needs (oldest_age_ms from the poll's now) */
} lag_sample;

typedef struct lag_poll_result {
    lag_sample *samples; /* sorted by stream, then consumer */
    size_t len, cap;
    char **streams; /* the streams polled (existing ones), sorted */
    size_t streams_len;
    char errors[LAG_POLL_ERRORS_MAX][256]; /* what could not be read */
    size_t errors_len;
    char **unreadable; /* streams that exist (or may) but could not be read fully */
    size_t unreadable_len;
    int64_t started_unix_ms, took_ms;
} lag_poll_result;

/* Polls `streams` (n of them; n == 0: every stream of the account). A stream that
 * cannot be read is an error line and listed in `unreadable`, not a failure; a
 * configured stream that does not exist is an error line. GF_OK unless the stream list
 * itself cannot be read (GF_ERR_UNAVAILABLE / GF_ERR_TIMEOUT / GF_ERR_NATS) or memory
 * runs out, with `why`. */
gf_err lag_poll(natsConnection *nc, jsCtx *js, const char *const *streams, size_t n,
                lag_poll_result *out, char *why, size_t why_size);
void lag_poll_free(lag_poll_result *r);

/* True when `stream`'s consumers may be missing from r because it could not be read (so
 * their absence says nothing). */
bool lag_poll_unreadable(const lag_poll_result *r, const char *stream);

/* A ConsumerLag of s and its verdict, with level = computed (the caller sets a published
 * level). Strings borrowed from s. */
void lag_sample_fill(Gamefn__V1__ConsumerLag *c, const lag_sample *s, const lag_verdict *v);

/* The stored time of the first message at or after `from_seq` on `filter` (NULL or "" =
 * any subject) in `stream`: *seq and *unix_ms, or GF_ERR_NOT_FOUND. Also used by tests. */
gf_err lag_poll_next_stored(natsConnection *nc, const char *stream, const char *filter,
                            uint64_t from_seq, uint64_t *seq, int64_t *unix_ms);

#endif
