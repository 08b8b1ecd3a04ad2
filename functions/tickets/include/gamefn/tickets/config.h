/*
 * gamefn/tickets/config.h — the matchmaking service's shared configuration: the
 * `functions.matcher` section, with the engine's queue and datacenter table embedded
 * under `matchmaking:`, and the tick groups derived from it.
 *
 * One source of truth: the matcher matches with this table, intake validates tickets and
 * answers discovery with it, the ticker publishes one tick subject per tick group of it.
 * Intake and ticker read it from the same file with gf_mm_config_load().
 *
 * A tick group is what one matcher tick covers: a playlist (its queues share a pool
 * while a region's population is low, so they must be matched in one call), or a
 * queue without a playlist. Its name is the playlist's or the queue's, and is the last
 * token of its tick subject, gamefn.v1.tick.matcher.<group>. A queue without a playlist
 * may therefore not be named like a playlist (checked).
 *
 * Ownership: gf_mm_config_load() returns a gf_config that owns the section; the
 * gf_mm_tables built from it borrow its strings (free the tables first or together).
 * Threads: built once at start, read-only afterwards.
 */
#ifndef GAMEFN_TICKETS_CONFIG_H
#define GAMEFN_TICKETS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/config.h"
#include "gamefn/err.h"
#include "gamefn/match/config.h"

#define GF_MM_TICK_SUBJECT "gamefn.v1.tick.matcher" /* .<tick group> */

/* functions.matcher */
typedef struct gf_mm_config {
    int64_t claim_lease_ms;     /* a claim's lease: after it any matcher releases the ticket */
    int64_t status_interval_ms; /* QUEUED pushes at most this often per ticket */
    int64_t wait_half_life_ms;  /* the wait estimator's memory */
    const char **groups;        /* tick groups this replica takes; empty = every group */
    size_t groups_len;
    gf_match_config matchmaking; /* the engine's table (docs/MATCHMAKING.md) */
} gf_mm_config;

extern const gf_cfg_table gf_mm_config_table;

typedef struct gf_mm_group {
    const char *name; /* playlist or queue name */
    uint32_t queues[GF_MATCH_MAX_QUEUES];
    size_t queues_len;
} gf_mm_group;

/* A prepared engine config (teams and team sizes derived) in storage of its own, and the
 * tick groups. */
typedef struct gf_mm_tables {
    gf_match_config cfg; /* prepared; points into the arrays below */
    gf_match_queue queues[GF_MATCH_MAX_QUEUES];
    gf_match_dc dcs[GF_MATCH_MAX_DCS];
    gf_mm_group groups[GF_MATCH_MAX_QUEUES];
    size_t groups_len;
    int32_t queue_group[GF_MATCH_MAX_QUEUES]; /* queue index -> group index */
} gf_mm_tables;

/* Copies `src` (the parsed table) and prepares the copy. GF_ERR_CONFIG with `why`
 * ("key: problem") if it does not check. */
gf_err gf_mm_tables_build(const gf_match_config *src, gf_mm_tables *out, char *why,
                          size_t why_size);

/* Group index by name; -1 when absent. */
int gf_mm_group_index(const gf_mm_tables *t, const char *name);

/* Reads `functions.matcher` from the config file at `path` (the file the function was
 * started with, gf_config(fn)->path). The section is gf_config_function(*out). Errors
 * as gf_config_load(). */
gf_err gf_mm_config_load(const char *path, gf_config **out, gf_config_error *err);

#endif
