/*
 * gap_list.h — the open suspected gaps the lag monitor lists in its report. Pure.
 *
 * The gap tracker (gamefn/gap_tracker.h) reports each suspected gap once and, if it
 * fills later, once more as closed with the range first reported; this list keeps the
 * ones reported and not closed, oldest report first. A gap that stays open longer than
 * the monitor's forget_after leaves the list (lag_gap_list_expire) but stays counted in
 * the tracker's open holes. Bounded by the caller's `max` in lag_gap_list_add: past it
 * the oldest entry is dropped and counted (unlisted; a closed gap that is not listed
 * any more lowers the count again).
 *
 * Ownership: the list owns its entries (source ids copied); lag_gap_list_free releases
 * them. One thread.
 */
#ifndef GAMEFN_LAG_GAP_LIST_H
#define GAMEFN_LAG_GAP_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"

typedef struct lag_gap {
    char source_id[65];
    uint64_t first, last;
    int64_t opened_unix_ms, reported_unix_ms;
    bool definite;
} lag_gap;

typedef struct lag_gap_list {
    lag_gap *items; /* oldest report first */
    size_t len, cap;
    uint64_t unlisted; /* open ones pushed out by the bound or expired */
} lag_gap_list;

/* Adds a suspected gap; max >= 1 bounds the list (the oldest goes). GF_ERR_INVALID for a
 * source id longer than 64 bytes. */
gf_err lag_gap_list_add(lag_gap_list *l, const lag_gap *g, size_t max);

/* Removes the entry of a closed gap (same source and first..last); false if absent
 * (then it was unlisted). */
bool lag_gap_list_close(lag_gap_list *l, const char *source_id, uint64_t first, uint64_t last);

/* Drops entries reported before cutoff; returns how many. */
size_t lag_gap_list_expire(lag_gap_list *l, int64_t cutoff_unix_ms);

void lag_gap_list_free(lag_gap_list *l);

#endif
