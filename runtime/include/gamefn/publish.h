/*
 * gamefn/publish.h — the one way a function writes to JetStream: status pushes,
 * matches, events, dead letters and KV compare-and-set claims.
 *
 * What a publisher guarantees
 * - Every message carries a Nats-Msg-Id (required for gf_publish_send, generated
 *   when a CAS leaves it NULL). Within the stream's duplicate window (2 min by
 *   default, KV buckets included) the server stores a given id at most once and
 *   answers every resend of it with the original sequence, so retries are safe.
 * - Asynchronous, with a bounded window: at most max_in_flight messages are between
 *   an accepted send and the end of their callback. A send into a full window waits
 *   (at most send_wait_ms) for room.
 * - Retried, same Msg-Id, until a definite answer: after "no responders" (no stream
 *   leader is listening, as during a leader election), a JetStream 503, a failed
 *   publish while reconnecting, or no answer within attempt_timeout_ms, a message is
 *   resent after an exponential backoff with jitter (backoff_min_ms doubling up to
 *   backoff_max_ms). A stream-leader failover (4.5-7 s measured on a 3-node
 *   nats-server 2.9.10 cluster) and a server restart are ridden out this way. When
 *   give_up_ms have passed since the send without a definite answer, the message
 *   ends with GF_ERR_TIMEOUT: outcome unknown.
 * - Exactly one callback per accepted message (gf_publish_send returned GF_OK);
 *   none for a refused one (any other return).
 *
 * Results (gf_publish_result.err)
 *   GF_OK              stored. seq is its stream sequence (for a CAS: the key's new
 *                      revision). duplicate: the stream already held this Msg-Id and
 *                      seq is that message's: an earlier send by the caller, or an
 *                      earlier attempt of this one whose answer was lost.
 *   GF_ERR_CONFLICT    JetStream refused the expectation: 10071 (wrong last
 *                      sequence: the CAS lost) or 10070 (wrong last Msg-Id). Not stored.
 *   GF_ERR_TIMEOUT     give_up_ms passed without a definite answer. Outcome unknown:
 *                      it may be stored. Resend with the same Msg-Id (within the
 *                      duplicate window) or re-read the key to find out.
 *   GF_ERR_UNAVAILABLE the publisher was closed, or the connection closed for good,
 *                      before a definite answer. Outcome unknown, as for a timeout.
 *   GF_ERR_NATS        JetStream refused it for another reason; js_code says which
 *                      (e.g. 10054 message larger than the stream allows; 10077 the
 *                      stream is full: max messages or bytes with discard new). Not
 *                      stored.
 *   GF_ERR_NOMEM       out of memory while resending. Outcome unknown.
 *
 * KV compare-and-set (gf_publish_cas_send) goes through the same window, retries
 * and callbacks. A CAS is a publish to $KV.<bucket>.<key> with
 * Nats-Expected-Last-Subject-Sequence; a lost race is GF_ERR_CONFLICT from
 * JetStream's error code 10071, never from error text.
 * - UPDATE writes only if the key's latest revision is `revision`.
 * - CREATE writes only if the key has no value: absent, or its latest revision is a
 *   delete or purge marker (as nats.c's kvStore_Create: on 10071 the publisher reads
 *   the key's last message from the stream leader and, if it is a marker, resends
 *   expecting the marker's revision).
 * - DELETE writes a delete marker ("KV-Operation: DEL") only if the key's latest
 *   revision is `revision`.
 * - A resend after a lost answer is a duplicate, reported as GF_OK with the original
 *   revision. A 3-node nats-server 2.9.10 checks the expected revision BEFORE the
 *   Msg-Id (a single server checks the Msg-Id first), so there such a resend comes
 *   back as 10071. The publisher then asks the stream leader for the key's first
 *   message after the expected revision, and if it carries this CAS's Msg-Id, reports
 *   GF_OK (duplicate, that revision). It asks when an earlier attempt of its own went
 *   unanswered, and on every 10071 of a CAS whose Msg-Id the caller chose (the caller
 *   may be resending); a generated id costs no lookup on an ordinary lost race. The
 *   answer needs that message still in the bucket's history: with history 1 and a
 *   later write by someone else on top of it, the CAS is reported as GF_ERR_CONFLICT
 *   although it was applied (and then superseded).
 *
 * Threads
 * - Every function may be called from any thread, concurrently.
 * - Callbacks run on nats.c's delivery thread of the publisher's reply subscription
 *   (answers), on the publisher's retry thread (give-ups, CAS lookups, failed
 *   resends) and, for messages still open when it is called, on the thread in
 *   gf_publish_close. Two callbacks of one publisher may run at the same time: state
 *   they share needs a lock or atomics. While a callback runs, other answers on its
 *   thread wait: keep callbacks short and never block in them on anything a callback
 *   has to release.
 * - From inside a callback (of any publisher), gf_publish_send and
 *   gf_publish_cas_send never wait: a send is accepted even over a full window, so
 *   a callback that sends the next message of a chain keeps the window steady (one
 *   that sends several per completion makes it grow). gf_publish_flush and the _sync
 *   wrappers return GF_ERR_INVALID there (they would wait for themselves);
 *   gf_publish_close must not be called from a callback (it aborts).
 *
 * Ownership
 * - gf_publish_open allocates, gf_publish_close frees. The natsConnection is
 *   borrowed: close the publisher before closing or destroying the connection.
 * - Everything a send takes (subject, ids, payload, headers) is copied before it
 *   returns. The result a callback gets is valid only during the callback.
 */
#ifndef GAMEFN_PUBLISH_H
#define GAMEFN_PUBLISH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"

enum {
    GF_PUBLISH_MSG_ID_MAX = 256, /* bytes of a Nats-Msg-Id: printable ASCII, no space */
    GF_PUBLISH_HEADERS_MAX = 16, /* extra headers per message */
    GF_PUBLISH_WINDOW_DEFAULT = 1024,
    GF_PUBLISH_GIVE_UP_MS_DEFAULT = 30000,
    GF_PUBLISH_ATTEMPT_MS_DEFAULT = 2000,
    GF_PUBLISH_BACKOFF_MIN_MS_DEFAULT = 50,
    GF_PUBLISH_BACKOFF_MAX_MS_DEFAULT = 1000,
};

typedef struct gf_publish gf_publish;

/* A zeroed struct means every default. */
typedef struct gf_publish_opts {
    int max_in_flight;          /* the window; 0 = GF_PUBLISH_WINDOW_DEFAULT */
    int64_t give_up_ms;         /* per message, from its send; 0 = 30000 */
    int64_t attempt_timeout_ms; /* one attempt without an answer; 0 = 2000 */
    int64_t backoff_min_ms;     /* first retry delay; 0 = 50 */
    int64_t backoff_max_ms;     /* retry delay cap; 0 = 1000 */
    int64_t send_wait_ms;       /* a send's wait for room: 0 = give_up_ms, < 0 = no wait */
    const char *inbox_prefix;   /* reply subjects' prefix; NULL = "_INBOX" */
    const char *api_prefix;     /* JetStream API prefix (CAS lookups); NULL = "$JS.API" */
    const atomic_int *stop;     /* once non-zero, a waiting send gives up (may be NULL) */
} gf_publish_opts;

typedef struct gf_publish_result {
    gf_err err;     /* see "Results" above */
    uint64_t seq;   /* GF_OK: stream sequence, or the key's new revision */
    bool duplicate; /* GF_OK: the Msg-Id was already stored; seq is the original's */
    int js_code;    /* JetStream err_code of a refusal (10071, 10054, ...), else 0 */
    int attempts;   /* messages actually sent for it (1 = no resend) */
} gf_publish_result;

/* Whether a result is JetStream refusing for want of room, so nothing was stored and a
 * resend will be refused too until room is made: 10077 (the stream's or bucket's
 * max_bytes or max_msgs with discard new) or 10002 (the account's JetStream limit).
 * The server's own max_file_store / max_memory_store (10023, sent with code 503) is not
 * among them: a 503 is retried until give_up_ms and ends as GF_ERR_TIMEOUT. */
bool gf_publish_full(gf_err err, int js_code);

/* Called exactly once per accepted message; see "Threads". */
typedef void (*gf_publish_done_fn)(const gf_publish_result *res, void *closure);

typedef struct gf_publish_header {
    const char *key;   /* a header name: printable ASCII, no ':' or space */
    const char *value; /* no CR, LF or other control character except tab */
} gf_publish_header;

typedef struct gf_publish_msg {
    const char *subject; /* a publish subject: no wildcard, no empty token */
    const char *msg_id;  /* required: 1..GF_PUBLISH_MSG_ID_MAX bytes */
    const void *data;    /* may be NULL when len is 0 */
    size_t len;
    const gf_publish_header *headers; /* optional; none may be Nats-Msg-Id */
    size_t headers_len;               /* <= GF_PUBLISH_HEADERS_MAX */
    gf_publish_done_fn done;          /* may be NULL: still retried, result dropped */
    void *closure;
} gf_publish_msg;

typedef enum gf_publish_cas_kind {
    GF_PUBLISH_CAS_UPDATE, /* write if the key's latest revision is `revision` */
    GF_PUBLISH_CAS_CREATE, /* write if the key is absent, deleted or purged */
    GF_PUBLISH_CAS_DELETE, /* delete marker if the key's latest revision is `revision` */
} gf_publish_cas_kind;

typedef struct gf_publish_cas {
    gf_publish_cas_kind kind;
    const char *bucket; /* KV bucket name (see gf_name_bucket_ok) */
    const char *key;    /* KV key (see gf_name_kv_key_ok) */
    uint64_t revision;  /* UPDATE, DELETE: the revision read, > 0; CREATE: ignored */
    const void *data;   /* UPDATE, CREATE; DELETE: must be empty */
    size_t len;
    const char *msg_id; /* NULL: a unique id is generated. Give the same id to
                         * make a resend of the same change recognisable. */
    gf_publish_done_fn done;
    void *closure;
} gf_publish_cas;

typedef struct gf_publish_stats {
    long long sent;       /* accepted sends (messages and CAS) */
    long long ok;         /* GF_OK results, duplicates included */
    long long duplicates; /* GF_OK with duplicate set */
    long long conflicts;  /* GF_ERR_CONFLICT results */
    long long failed;     /* GF_ERR_NATS / GF_ERR_NOMEM results */
    long long gave_up;    /* GF_ERR_TIMEOUT results */
    long long closed;     /* GF_ERR_UNAVAILABLE results */
    long long resends;    /* attempts beyond the first */
    long long lookups;    /* CAS lookups asked of a stream leader */
} gf_publish_stats;

/* Subscribes the publisher's reply subject on nc and starts its retry thread.
 * opts may be NULL. GF_ERR_INVALID for out-of-range options, GF_ERR_UNAVAILABLE if
 * nc is closed. */
gf_err gf_publish_open(natsConnection *nc, const gf_publish_opts *opts, gf_publish **out);

/* Stops accepting sends, waits up to timeout_ms for the open messages (still retried
 * meanwhile), ends the rest with GF_ERR_UNAVAILABLE on this thread, and frees. NULL is
 * fine. Not from a callback. Also waits for one round trip to the server (a flush,
 * bounded) before it frees its reply subscription: nats.c 3.4.1's read loop may still
 * be handling an answer for it (docs/NATS-FACTS.md §4). */
void gf_publish_close(gf_publish *p, int64_t timeout_ms);

/* Accepts a message. GF_OK: the callback will run exactly once. Otherwise nothing is
 * sent and no callback runs: GF_ERR_INVALID (bad subject, id, header, or payload plus
 * headers over the server's max_payload), GF_ERR_TIMEOUT (no room within send_wait_ms),
 * GF_ERR_UNAVAILABLE (closing, *stop set, or the connection closed), GF_ERR_NOMEM. */
gf_err gf_publish_send(gf_publish *p, const gf_publish_msg *m);

/* Same for a KV compare-and-set; same returns. */
gf_err gf_publish_cas_send(gf_publish *p, const gf_publish_cas *c);

/* Waits until every message accepted before this call has finished its callback.
 * GF_OK, GF_ERR_TIMEOUT after timeout_ms (< 0: no bound), GF_ERR_INVALID from a
 * callback. */
gf_err gf_publish_flush(gf_publish *p, int64_t timeout_ms);

/* Send and wait for the result (m->done / c->done are ignored). Returns the send's
 * error if it was refused, else res->err; *res is filled when the send was accepted.
 * GF_ERR_INVALID from a callback. */
gf_err gf_publish_send_sync(gf_publish *p, const gf_publish_msg *m, gf_publish_result *res);
gf_err gf_publish_cas_sync(gf_publish *p, const gf_publish_cas *c, gf_publish_result *res);

/* Messages accepted and not yet finished (their callback included). */
int gf_publish_in_flight(gf_publish *p);

void gf_publish_stats_get(gf_publish *p, gf_publish_stats *out);

#endif
