/*
 * publish_int.h — private to the publisher (publish.c, publish_reply.c,
 * publish_lookup.c): the pure pieces, kept apart so unit tests can feed them
 * good, boundary and malformed input without a server.
 *
 * - Answers: what a JetStream publish's reply says (a PubAck, an API error with its
 *   HTTP-like code and err_code, "no responders") and what the publisher does with
 *   it (done, conflict, refused, retry).
 * - Stored messages: what a stream leader's STREAM.MSG.GET answer says about a KV
 *   key's message (sequence, Nats-Msg-Id, KV-Operation), for CAS lookups.
 * - Input checks: Msg-Ids and extra headers.
 *
 * Nothing here allocates beyond jansson's own parse, keeps state or locks.
 */
#ifndef GAMEFN_PUBLISH_INT_H
#define GAMEFN_PUBLISH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/publish.h"

/* What one reply says. */
typedef enum gf__pub_answer {
    GF__PUB_ACK,           /* {"stream":..,"seq":N[,"duplicate":true]} */
    GF__PUB_API_ERROR,     /* {"error":{"code":C,"err_code":E,..}} */
    GF__PUB_NO_RESPONDERS, /* a 503 status: nothing listens on the subject */
    GF__PUB_STATUS,        /* another status message without a body */
    GF__PUB_GARBAGE,       /* none of the above */
} gf__pub_answer;

typedef struct gf__pub_reply {
    gf__pub_answer answer;
    uint64_t seq;
    bool duplicate;
    int code;     /* API error: 400, 503, ... */
    int err_code; /* API error: JetStream err_code, 0 if absent */
} gf__pub_reply;

/* Reads a publish reply's body (no_responders: natsMsg_IsNoResponders said so;
 * has_status: it carries a Status header). Never fails: odd input is GARBAGE. */
void gf__publish_reply_parse(const char *data, size_t len, bool no_responders, bool has_status,
                             gf__pub_reply *out);

/* What the publisher does with an answer. */
typedef enum gf__pub_verdict {
    GF__PUB_DONE,     /* stored (seq, duplicate) */
    GF__PUB_CONFLICT, /* 10071 / 10070: the expectation failed, not stored */
    GF__PUB_REFUSED,  /* another API error: not stored, final */
    GF__PUB_RETRY,    /* not stored, worth resending (no responders, 503, not leader) */
} gf__pub_verdict;

gf__pub_verdict gf__publish_verdict(const gf__pub_reply *r);

/* A stored message as a STREAM.MSG.GET answer describes it. */
typedef enum gf__pub_kv_op {
    GF__PUB_KV_PUT = 0,
    GF__PUB_KV_DEL,
    GF__PUB_KV_PURGE,
} gf__pub_kv_op;

typedef struct gf__pub_stored {
    bool found; /* false: "no message found" (10037) */
    uint64_t seq;
    bool has_msg_id;
    char msg_id[GF_PUBLISH_MSG_ID_MAX + 1];
    gf__pub_kv_op op;
} gf__pub_stored;

/* Reads a STREAM.MSG.GET answer. GF_OK with out->found set or clear; GF_ERR_RETRY
 * for an error worth asking again (503, not leader); GF_ERR_NATS for any other
 * error or a malformed answer. */
gf_err gf__publish_stored_parse(const char *data, size_t len, gf__pub_stored *out);

/* Reads a NATS header block ("NATS/1.0\r\nKey: Value\r\n...\r\n") for Nats-Msg-Id and
 * KV-Operation, into out (found/seq untouched). GF_ERR_INVALID if malformed. */
gf_err gf__publish_hdrs_parse(const char *block, size_t len, gf__pub_stored *out);

/* 1..GF_PUBLISH_MSG_ID_MAX bytes of printable ASCII without space. */
bool gf__publish_msg_id_ok(const char *id);

/* An extra header the caller may set: a valid name that is none of `reserved`
 * (NULL-terminated, compared ignoring case) and a value without control characters
 * other than tab. */
bool gf__publish_header_ok(const gf_publish_header *h, const char *const *reserved);

/* Bytes the header block takes on the wire (nats.c's encoding). */
size_t gf__publish_header_bytes(const char *const *keys, const char *const *values, size_t n);

/* Delay before the next resend after `failures` failed attempts (>= 1):
 * min(max_ms, min_ms * 2^(failures-1)), then scaled by (50 + jitter_pct/2) % for
 * jitter_pct in [0, 100], so replicas that failed together do not retry together. */
int64_t gf__publish_backoff_ms(int64_t min_ms, int64_t max_ms, int failures, int jitter_pct);

/* Asks the stream leader, through `api_prefix`.STREAM.MSG.GET.<stream>, for the
 * message of `subject`: the last one (next == false) or the first at or after
 * sequence `from` (next == true). Blocks up to timeout_ms. GF_OK with out filled
 * (found or not); GF_ERR_RETRY / GF_ERR_TIMEOUT / GF_ERR_UNAVAILABLE: ask again
 * later; GF_ERR_NATS: give up asking. */
gf_err gf__publish_lookup(natsConnection *nc, const char *api_prefix, const char *stream,
                          const char *subject, bool next, uint64_t from, int64_t timeout_ms,
                          gf__pub_stored *out);

#endif
