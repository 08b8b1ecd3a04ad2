/*
 * mirror_support.h — the matchmaking buckets and their AUDIT_* mirrors, for the tests of
 * a mirror that misses revisions: test_check_mirror.c (one server) and
 * test_check_mirror_cluster.c (a 3-node cluster, R3). Buckets, mirrors, ticket and player
 * records written with and without compare-and-set, stream positions, and one run of the
 * checker's read (gamefn/check/check_read.h).
 *
 * The assert helpers use cmocka and so fail the calling test. On a cluster, creating a
 * bucket or a stream and writing are retried briefly (a new cluster may not place R3 yet;
 * a restarted one may still be electing leaders). Ownership: kvStore handles returned
 * are the caller's (kvStore_Destroy). Test-only; single-threaded.
 */
#ifndef GAMEFN_TEST_MIRROR_SUPPORT_H
#define GAMEFN_TEST_MIRROR_SUPPORT_H

#include <nats/nats.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/check/check_read.h"

/* The buckets tickets, matches and players with `replicas` copies. History 5 (what the
 * tickets bucket had before it kept 64) unless tickets_history or players_history is
 * above 0. *tickets and *players (either may be NULL) receive handles on those buckets. */
void mirror_deploy_buckets(jsCtx *js, int replicas, int64_t tickets_history,
                           int64_t players_history, kvStore **tickets, kvStore **players);

/* Their mirrors AUDIT_TICKETS, AUDIT_MATCHES, AUDIT_PLAYERS with `replicas` copies;
 * AUDIT_TICKETS holds at most `tickets_max` messages with discard new (0: no limit). */
void mirror_deploy_mirrors(jsCtx *js, int replicas, int64_t tickets_max);

/* One revision of ticket `id`: without compare-and-set when last is 0, else a
 * compare-and-set on revision `last` (Nats-Expected-Last-Subject-Sequence: last), as
 * every state change of a ticket is. The new revision. */
uint64_t mirror_put_ticket(kvStore *tickets, const char *id, uint64_t last);
/* The same for player `id` (a PlayerMatchRecord naming ticket "t-<id>"). */
uint64_t mirror_put_player(kvStore *players, const char *id, uint64_t last);
/* One attempt of either, not retried: true with the new revision in *rev, false when the
 * bucket did not take it (no leader yet, no answer in time). */
bool mirror_try_put_ticket(kvStore *tickets, const char *id, uint64_t last, uint64_t *rev);
bool mirror_try_put_player(kvStore *players, const char *id, uint64_t last, uint64_t *rev);

uint64_t mirror_last_seq(jsCtx *js, const char *stream);
uint64_t mirror_msgs(jsCtx *js, const char *stream); /* messages it holds */
/* Whether `stream` holds a message at `seq`; when it does and `expected` is not NULL,
 * *expected receives its Nats-Expected-Last-Subject-Sequence (-1: none). */
bool mirror_has(jsCtx *js, const char *stream, uint64_t seq, int64_t *expected);
/* The subject of `stream`'s message at `seq` into buf; asserts it holds one. */
void mirror_subject_at(jsCtx *js, const char *stream, uint64_t seq, char *buf, size_t size);
/* Polls (every 50 ms, timeout_ms at most) until `stream`'s last sequence is `want`;
 * asserts it is. */
void mirror_wait_last(jsCtx *js, const char *stream, uint64_t want, int64_t timeout_ms);

typedef struct mirror_result {
    gf_check_read_notes notes;
    uint64_t tickets, revisions; /* the checker's ticket and ticket-revision totals */
    int64_t took_ms;
    char why[256]; /* what the read could not do, when mirror_try_check returned an error */
} mirror_result;

/* The checker's read of the matchmaking streams (no events, no scores), with catch_up_ms
 * as its --catch-up; the result is printed to stderr. A read that fails fails the test. */
void mirror_check(natsConnection *nc, jsCtx *js, int64_t catch_up_ms, mirror_result *out);
/* The same, returning gf_check_read's error (with out->why) instead of failing on it. */
gf_err mirror_try_check(natsConnection *nc, jsCtx *js, int64_t catch_up_ms, mirror_result *out);

#endif
