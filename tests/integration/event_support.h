/*
 * event_support.h — helpers for the event-log integration tests: build GameEvents,
 * publish them the way a producer does (Nats-Msg-Id = event id, Gamefn-Source and
 * Gamefn-Source-Seq headers, to gamefn.v1.event.<player>.<type>, which the server maps
 * to gamefn.v1.evp.<partition>.<player>.<type>), read KV values and DLQ records. The
 * gamefn CLI runs through cli_support.h (cli_run).
 *
 * Ownership: built events are malloc'd for the caller. Threads: one test thread.
 */
#ifndef GAMEFN_TEST_EVENT_SUPPORT_H
#define GAMEFN_TEST_EVENT_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "cli_support.h"
#include "fn_support.h"

/* The server config's mappings section (docs/PROTOCOL.md §9) and EVENTS as shipped. */
extern const char gf_ev_mapping[];
extern const char gf_ev_stream[];

/* The partitioned group `sums` of EVENTS that the test consumer
 * (tests/fixtures/test_consumer.c) serves, as jetstream.consumers[] YAML: 16 partitions,
 * a 3-s lease, 3 deliveries with backoff. A test appends its own keys or groups. */
#define GF_EV_SUMS_GROUP                                                                           \
    "    - stream: EVENTS\n"                                                                       \
    "      name: sums\n"                                                                           \
    "      partitions: 16\n"                                                                       \
    "      filter_subject: \"gamefn.v1.evp.{partition}.>\"\n"                                      \
    "      lease_ttl: 3s\n"                                                                        \
    "      ack_wait: 2s\n"                                                                         \
    "      max_deliver: 3\n"                                                                       \
    "      backoff: [100ms, 200ms]\n"
/* The buckets the test consumer writes: its sums, and the DLQ mover's reasons. */
#define GF_EV_SUMS_BUCKETS                                                                         \
    "    - name: test_sums\n"                                                                      \
    "    - name: dlq_reasons\n"                                                                    \
    "      ttl: 7d\n"

/* A ScoreEvent: event id "<source>-<seq>", board "" = default. *out malloc'd. */
int gf_ev_score(const char *source, uint64_t seq, const char *player, int64_t delta,
                const char *board, int64_t occurred_unix_ms, uint8_t **out, size_t *len);
/* A KillEvent (a type the score consumers ignore). */
int gf_ev_kill(const char *source, uint64_t seq, const char *player, uint8_t **out, size_t *len);

/* A producer's publish: to gamefn.v1.event.<player>.<type>, Msg-Id msg_id (NULL =
 * "<source>-<seq>"), headers Gamefn-Source/-Seq. Async ones are completed by
 * gf_ev_flush. 0 on success (sync: acked). */
int gf_ev_publish(jsCtx *js, const char *player, const char *type, const uint8_t *data, size_t len,
                  const char *source, uint64_t seq, const char *msg_id, bool async);
/* Raw bytes to a subject with a Msg-Id (garbage, redrives). */
int gf_ev_publish_raw(jsCtx *js, const char *subject, const void *data, size_t len,
                      const char *msg_id);
int gf_ev_flush(jsCtx *js);

/* A JetStream context on nc with a bounded async window (for bulk publishing). */
jsCtx *gf_ev_js(natsConnection *nc);

/* The latest value of bucket/key into buf (NUL-terminated); its length, or -1 if absent. */
int gf_ev_kv_get(jsCtx *js, const char *bucket, const char *key, void *buf, size_t size);

/* The effect bytes of an EffectRecord stored under bucket/key (NUL-terminated text);
 * length or -1. */
int gf_ev_effect(jsCtx *js, const char *bucket, const char *key, char *buf, size_t size);

/* The test consumer's effect for `player` without its "@<last seq>" token: "<count>
 * <sum>", then " out-of-order <n>" if events were applied out of stream order. Length
 * or -1. */
int gf_ev_sums(jsCtx *js, const char *player, char *buf, size_t size);

/* The partition of a player (FNV-1a mod 16). */
unsigned gf_ev_partition(const char *player);

#endif
