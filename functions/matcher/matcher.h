/*
 * matcher.h — the matcher function's state and its tick.
 *
 * Each tick of a tick group (gamefn.v1.tick.matcher.<group>, queue group "matcher", so
 * one replica takes each tick; ticks of different groups spread over replicas):
 *   1. snapshot of the group's live tickets from the mirror (mirror.h);
 *   2. QUEUED tickets past their TTL (or whose queue left the config) -> TIMED_OUT, their
 *      players records cleared;
 *   3. CLAIMED tickets whose claim lease passed: their match is aborted through the
 *      commit record (CLAIM_EXPIRED) and they return to the pool; a match found
 *      COMMITTED instead is helped along (ASSIGNED);
 *   4. gf_match_tick_ws() on the QUEUED rest;
 *   5. claims: every member of every match by compare-and-set on the revision the
 *      mirror holds, all of the tick's claims in one batch; a match whose claims all
 *      won is published to MATCHES (Nats-Msg-Id = match_id); a match with a lost claim
 *      is rolled back (its won claims released, MATCH_DROPPED); a publish whose outcome
 *      is unknown aborts the match through the commit record (PUBLISH_UNKNOWN);
 *   6. QUEUED pushes (reason, current limits, estimated wait), at most one per
 *      status_interval per ticket, and at once when the reason changes;
 *   7. the wait estimator learns from the matches.
 * Every write is a compare-and-set, so replicas overlapping on a group, duplicated or
 * late ticks, and a stale mirror cost conflicts, never a double claim.
 *
 * Threads: one nats.c delivery thread per subscribed group runs that group's ticks (so
 * a group's workspace and estimator are used by one thread); groups run concurrently and
 * share the mirror and the store, which are thread-safe. Counters are atomic.
 * Ownership: matcher_start allocates everything; matcher_stop frees it.
 */
#ifndef GAMEFN_MATCHER_MATCHER_H
#define GAMEFN_MATCHER_MATCHER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/match/tick.h"
#include "gamefn/match/wait.h"
#include "gamefn/test_pause.h"
#include "gamefn/tickets/config.h"
#include "mirror.h"
#include "mmstore.h"

struct matcher;

typedef struct mm_group {
    struct matcher *m;
    int index; /* into tables.groups */
    gf_match_workspace *ws;
    gf_match_wait *wait;
    natsSubscription *sub;
    uint64_t max_token; /* highest lease token seen: lower ones are a former leader's */
    int64_t last_log_ms;
} mm_group;

typedef struct matcher_counters {
    atomic_llong ticks, stale_ticks, matches, claims, claim_conflicts, rollbacks, published,
        publish_unknown, timed_out, released, helped, pushes;
} matcher_counters;

typedef struct matcher {
    const gf_mm_config *cfg;
    gf_mm_tables tables;
    natsConnection *nc;
    const char *instance_id;
    gf_mmstore *store;
    kvStore *tickets;
    mm_mirror *mirror;
    mm_group groups[GF_MATCH_MAX_QUEUES];
    size_t ngroups;
    matcher_counters n;
    /* Monotonic ms until which ticks match nothing: MATCHES refused a Match for want of
     * room (gf_publish_full). Every refused Match costs its tickets a claim and a release
     * and the matches bucket an abort record, so matching on every tick against a full
     * MATCHES would fill the buckets too. Any group's thread reads and sets it. */
    _Atomic int64_t matches_full_until_ms;
    /* GAMEFN_TEST_MATCHER_PAUSE=claimed[:<ms>] (gamefn/test_pause.h): tests stop the
     * matcher after a tick's claims are written, before its Matches are published. */
    gf_test_pause pause;
} matcher;

/* Builds the tables, binds the store, starts the mirror and subscribes the groups
 * (functions.matcher.groups, or all). tickets_ttl_ms is the tickets bucket's TTL (0 =
 * none): a queue whose ticket_ttl + claim_lease does not fit in it is refused. */
gf_err matcher_start(matcher *m, const gf_mm_config *cfg, natsConnection *nc, jsCtx *js,
                     const char *instance_id, int64_t tickets_ttl_ms, char *why, size_t why_size);
/* Drains the tick subscriptions (bounded by deadline_ms, monotonic) and frees. */
void matcher_stop(matcher *m, int64_t deadline_ms);

/* One tick of group g (tick.c). */
void matcher_tick(matcher *m, mm_group *g, int64_t tick_seq);

#endif
