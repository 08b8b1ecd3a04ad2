/*
 * letter.h — the dead-letter mover's pure logic (no NATS): reading the server's
 * advisories, building a DeadLetter, and planning a re-drive (`gamefn dlq redrive`).
 *
 * Advisories (JSON, nats-server 2.9):
 *   io.nats.jetstream.advisory.v1.max_deliver  on
 * $JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>
 *   io.nats.jetstream.advisory.v1.terminated   on
 * $JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.<stream>.<consumer> both with "stream", "consumer",
 * "stream_seq" and "deliveries".
 *
 * A DeadLetter goes to gamefn.v1.dlq.<stream>.<consumer> with Nats-Msg-Id
 * dlq-<stream>-<consumer>-<stream_seq>, so moving one message twice stores it once.
 * Its error is the consumer's recorded reason (DeadReason in `dlq_reasons`), made
 * valid UTF-8 without control characters and at most 256 bytes.
 *
 * A re-drive republishes the payload to the original subject with the original headers
 * (but Nats-* and earlier Gamefn-Redrive*), a fresh Msg-Id (so the stream's duplicate
 * window cannot swallow it) and Gamefn-Redrive: <consumer> (the durable that
 * dead-lettered it: the consumer framework applies a re-drive only in that durable's
 * group) and Gamefn-Redrive-Of: <DLQ sequence>.
 *
 * Ownership: built buffers and plans are malloc'd (dlq_plan_fini). Reentrant.
 */
#ifndef GAMEFN_DLQ_LETTER_H
#define GAMEFN_DLQ_LETTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/config.h"
#include "gamefn/err.h"
#include "gamefn/v1/dlq.pb-c.h"

enum { DLQ_NAME_MAX = 255, DLQ_HEADERS_MAX = 16, DLQ_TEXT_MAX = 256 };

typedef struct dlq_advisory {
    Gamefn__V1__DeadLetterReason reason; /* MAX_DELIVERIES or TERMINATED */
    char stream[DLQ_NAME_MAX + 1];
    char consumer[DLQ_NAME_MAX + 1];
    uint64_t stream_seq;
    uint64_t deliveries;
} dlq_advisory;

/* GF_ERR_INVALID (why filled) for JSON that is not one of the two advisories. */
gf_err dlq_advisory_parse(const char *json, size_t len, dlq_advisory *out, char *why,
                          size_t why_size);

/* The original message as fetched from its stream; present = false when it is gone. */
typedef struct dlq_original {
    bool present;
    const char *subject;
    const uint8_t *data;
    size_t len;
    const char *const *hkeys; /* first value of each header */
    const char *const *hvalues;
    size_t nheaders;
    int64_t stored_unix_ms;
} dlq_original;

/* The DeadLetter bytes; reason may be NULL (none recorded). */
gf_err dlq_letter_build(const dlq_advisory *a, const dlq_original *o,
                        const Gamefn__V1__DeadReason *reason, int64_t now_unix_ms, uint8_t **out,
                        size_t *len);

/* "gamefn.v1.dlq.<stream>.<consumer>" and "dlq-<stream>-<consumer>-<seq>". */
void dlq_subject(const char *stream, const char *consumer, char *buf, size_t size);
void dlq_msg_id(const dlq_advisory *a, char *buf, size_t size);

/* Valid UTF-8, control characters replaced by spaces, at most size - 1 <= 256 bytes, cut
 * on a character boundary. */
void dlq_text_clean(const char *in, char *out, size_t size);

/* A re-drive: where and what to publish. */
typedef struct dlq_plan {
    char subject[512];
    char msg_id[128];
    const char *hkeys[DLQ_HEADERS_MAX];
    const char *hvalues[DLQ_HEADERS_MAX];
    size_t nheaders;
    char redrive_of[24];
} dlq_plan;

/* From a DeadLetter read at DLQ sequence dlq_seq; `nonce` makes the Msg-Id unique
 * (e.g. the clock and a random number). The plan borrows from dl. GF_ERR_INVALID for a
 * letter without a subject or consumer. */
gf_err dlq_plan_redrive(const Gamefn__V1__DeadLetter *dl, uint64_t dlq_seq, uint64_t nonce,
                        dlq_plan *out);

/* functions.dlq. `streams`: the streams whose consumers' dead letters are moved (valid
 * stream names, each once, 1..64 of them; default EVENTS, MATCHES, ADVISORIES: the
 * streams gamefn's own durable consumers read). An advisory about any other stream
 * (an operator's consumer, a KV follower) is not gamefn's to move. */
typedef struct dlq_config {
    const char *reasons_bucket;
    const char **streams;
    size_t streams_len;
} dlq_config;
extern const gf_cfg_table dlq_config_table;

/* true when the advisory's stream is one of cfg->streams (exact, case-sensitive, as
 * stream names are). */
bool dlq_stream_moved(const dlq_config *cfg, const char *stream);

#endif
