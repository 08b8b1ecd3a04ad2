/*
 * tick_int.h — shared by the matcher's tick files (tick.c, settle.c, claim.c) only.
 */
#ifndef GAMEFN_MATCHER_TICK_INT_H
#define GAMEFN_MATCHER_TICK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/tickets/record.h"
#include "matcher.h"

typedef struct tick_ctx {
    matcher *m;
    mm_group *g;
    int64_t now;
    int64_t tick_seq;
    gf_match_ticket *pool; /* the QUEUED tickets offered to the engine */
    mm_ref **pool_refs;    /* pool[i] is pool_refs[i]->et */
    size_t npool;
} tick_ctx;

/* A batch of ticket writes: next[i] (a transition of a record read at base_rev[i]) is
 * written by compare-and-set; ok[i] and rev[i] report each result. With `push`, each
 * written record's status is pushed. Every ticket written from is marked busy. */
typedef struct tick_writes {
    size_t n;
    gf_ticket_next *next;
    uint64_t *base_rev;
    bool *ok;
    uint64_t *rev;
} tick_writes;

bool tick_writes_alloc(tick_writes *w, size_t n);
void tick_writes_free(tick_writes *w);
void tick_writes_run(tick_ctx *c, tick_writes *w, bool push);

/* settle.c: QUEUED tickets past their TTL or in a closed queue -> TIMED_OUT; CLAIMED
 * tickets whose lease passed -> settled through their match's commit record. */
void tick_end_tickets(tick_ctx *c, mm_ref **refs, size_t n);
void tick_release_expired(tick_ctx *c, mm_ref **refs, size_t n);

/* claim.c: claims, publishes or rolls back every match of the engine's result. */
void tick_claim(tick_ctx *c, const gf_match_result *res);

/* Region name of a region index; "" when unknown. */
const char *tick_region_name(const gf_match_config *cfg, uint32_t region);

#endif
