/*
 * gamefn/match/config.h — matchmaking queues and datacenters (pure C, no NATS).
 *
 * A gf_match_config lists the datacenters (each in a region) and the queues. A queue has
 * a mode (sbmm, ping_first, hybrid), a match shape (teams x team size), the two rule
 * curves of docs/MATCHMAKING.md, a ticket TTL, a population floor and an optional
 * playlist: queues of one playlist merge into one pool per region while that region's
 * population in any of them is below its floor.
 *
 * Two ways to build one:
 *  - YAML, through the runtime's table-driven parser: gf_match_config_parse() (or embed
 *    gf_match_config_table as a sub-table of a function's own section, then call
 *    gf_match_config_prepare() on the filled struct);
 *  - in code: fill the structs (gf_match_queue_defaults() gives a queue with the
 *    reference constants), then gf_match_config_prepare().
 *
 * gf_match_config_prepare() derives teams/team_size from `shape` and checks the whole
 * config (names unique, bounds, playlists consistent). The engine calls the same check on
 * every tick and refuses a config that fails it.
 *
 * Ownership: the config and everything it points to belong to the caller (or to the
 * YAML arena); the engine only borrows them for the duration of a call.
 * Threads: all functions are reentrant; a prepared config is read-only and may be shared.
 */
#ifndef GAMEFN_MATCH_CONFIG_H
#define GAMEFN_MATCH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/config.h"
#include "gamefn/err.h"

#define GF_MATCH_MAX_DCS       32 /* datacenters in a config (a bit mask each) */
#define GF_MATCH_MAX_QUEUES    64
#define GF_MATCH_MAX_TEAMS     64
#define GF_MATCH_MAX_TEAM_SIZE 64
#define GF_MATCH_MAX_PLAYERS   128 /* teams * team_size */
#define GF_MATCH_MAX_ATTRS     8   /* match_attributes per queue */

typedef enum gf_match_mode {
    GF_MATCH_SBMM = 0,       /* skill curve; ping limit fixed at ping_cap */
    GF_MATCH_PING_FIRST = 1, /* skill ignored; ping curve; FIFO within a datacenter */
    GF_MATCH_HYBRID = 2,     /* both curves widen */
} gf_match_mode;

typedef enum gf_match_party_skill {
    GF_MATCH_PARTY_AVERAGE = 0,
    GF_MATCH_PARTY_MAX = 1,
} gf_match_party_skill;

/* The rule curves, t = seconds in queue:
 *   allowed_skill_gap(t) = min(skill_cap, skill_base + skill_alpha * t^skill_gamma
 *                                         + sigma_widen * sigma)
 *   allowed_ping(t)      = min(ping_cap,  ping_base + ping_beta * floor(t / ping_step))  */
typedef struct gf_match_curve {
    double skill_base;
    double skill_alpha;
    double skill_gamma;
    double skill_cap;
    double sigma_widen; /* 0 = the rating uncertainty does not widen the gap */
    int64_t ping_base_ms;
    int64_t ping_beta_ms;
    int64_t ping_step_ms; /* > 0 */
    int64_t ping_cap_ms;
} gf_match_curve;

typedef struct gf_match_dc {
    const char *name;   /* unique, non-empty */
    const char *region; /* non-empty; datacenters sharing it form one region */
} gf_match_dc;

typedef struct gf_match_queue {
    const char *name;     /* unique, non-empty */
    const char *playlist; /* merge group; NULL or "" = never merges */
    int mode;             /* gf_match_mode */
    const char *shape;    /* "1v1", "5v5", "4v4v4", "ffa16"; NULL = use teams/team_size */
    int64_t teams;        /* derived from shape by gf_match_config_prepare() */
    int64_t team_size;
    int party_skill;      /* gf_match_party_skill */
    double premade_bonus; /* added to a party's skill per member beyond the first */
    gf_match_curve curve;
    int64_t ttl_ms;                /* older tickets are reported EXPIRED, never matched */
    int64_t population_floor;      /* players; below it the region's playlist merges */
    const char **match_attributes; /* attribute keys every member must share */
    size_t match_attributes_len;
} gf_match_queue;

typedef struct gf_match_config {
    gf_match_dc *datacenters;
    size_t datacenters_len;
    gf_match_queue *queues;
    size_t queues_len;
    int64_t search_window; /* a seed's walk looks at up to 4 x this many tickets and keeps
                              this many for the fallback (raised to 2 x a match's players);
                              0 = the table's default, set by gf_match_config_prepare() */
    int64_t clock_skew_ms; /* tickets queued at most this far in the future count as age 0 */
} gf_match_config;

/* The YAML schema of a gf_match_config (keys in docs/MATCHMAKING.md). Static. */
extern const gf_cfg_table gf_match_config_table;
extern const gf_cfg_table gf_match_queue_table;
extern const gf_cfg_table gf_match_dc_table;

/* A queue with every default of gf_match_queue_table's rows (the reference constants,
 * docs/MATCHMAKING.md): what a YAML queue giving only name, mode and shape gets. `shape`
 * is borrowed (may be NULL: then set teams/team_size). */
void gf_match_queue_defaults(gf_match_queue *q, const char *name, gf_match_mode mode,
                             const char *shape);

/* "5v5" -> 2 x 5, "4v4v4" -> 3 x 4, "1v1" -> 2 x 1, "ffa16" -> 16 x 1. GF_ERR_INVALID on
 * anything else or out of bounds. */
gf_err gf_match_shape_parse(const char *shape, int64_t *teams, int64_t *team_size);

/* Derives teams/team_size from shapes, then gf_match_config_check(). On failure returns
 * GF_ERR_CONFIG and writes "key: what is wrong" into why (may be NULL). */
gf_err gf_match_config_prepare(gf_match_config *cfg, char *why, size_t why_size);

/* Checks a prepared config without changing it. Same errors as above. */
gf_err gf_match_config_check(const gf_match_config *cfg, char *why, size_t why_size);

/* Parses a YAML fragment (the value of a `matchmaking:` key) with gf_match_config_table
 * and prepares it. Strings and arrays are owned by *arena_out (gf_config_arena_free()).
 * On error: GF_ERR_CONFIG (or GF_ERR_NOMEM), *err filled, *arena_out NULL. */
gf_err gf_match_config_parse(const char *name, const char *yaml, size_t len, gf_match_config *out,
                             struct gf_config_arena **arena_out, gf_config_error *err);

/* Index lookups by name; -1 when absent. Regions are numbered in order of first
 * appearance among the datacenters. */
int gf_match_config_dc_index(const gf_match_config *cfg, const char *name);
int gf_match_config_queue_index(const gf_match_config *cfg, const char *name);
int gf_match_config_region_index(const gf_match_config *cfg, const char *name);
/* Number of distinct regions; the region index of datacenter `dc`. */
size_t gf_match_config_regions(const gf_match_config *cfg);
int gf_match_config_dc_region(const gf_match_config *cfg, size_t dc);

const char *gf_match_mode_name(int mode); /* "sbmm", "ping_first", "hybrid", "?" */

#endif
