/*
 * source_index.h — a sorted array of per-source records, keyed by source id, shared
 * by dedup_window.c and gap_tracker.c. Private to gamefn_events_core.
 *
 * Every item is a pointer to a struct whose first member is a gf_src_head (the id
 * and the last activity time); items are kept in byte order of their ids (the order
 * the dedup encoding writes them in).
 * Lookup is a binary search; insertion and removal move pointers, which is cheap
 * for the few thousand sources (game servers) a consumer sees.
 * Ownership: the index owns its pointer array, not the items.
 */
#ifndef GAMEFN_EVENTS_SOURCE_INDEX_H
#define GAMEFN_EVENTS_SOURCE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"

enum { GF_SRC_ID_MAX = 64 };

typedef struct gf_src_head {
    uint8_t len;
    char id[GF_SRC_ID_MAX + 1];
    int64_t last_ms; /* the owner's clock at the item's last update: for pruning */
} gf_src_head;

typedef struct gf_src_index {
    void **items;
    size_t n, cap;
} gf_src_index;

/* Length of a source id (a token of 1..64 bytes), or 0 if it is not one. */
size_t gf_src_id_len(const char *id);

/* Copies a source id of `len` bytes (checked by the caller) into h. */
void gf_src_head_set(gf_src_head *h, const char *id, size_t len);

/* Binary search by id bytes. true: found at *pos. false: *pos is where it goes. */
bool gf_src_index_find(const gf_src_index *ix, const char *id, size_t len, size_t *pos);

gf_err gf_src_index_insert(gf_src_index *ix, size_t pos, void *item);

/* Removes and returns the item at pos. */
void *gf_src_index_remove(gf_src_index *ix, size_t pos);

/* Removes (and frees with free_item) the items with last_ms < cutoff_ms; returns
 * how many. */
size_t gf_src_index_prune(gf_src_index *ix, int64_t cutoff_ms, void (*free_item)(void *));

/* Frees the array (not the items). */
void gf_src_index_fini(gf_src_index *ix);

/* Byte order of ids, a shorter prefix first. */
int gf_src_head_cmp(const gf_src_head *a, const char *id, size_t len);

#endif
