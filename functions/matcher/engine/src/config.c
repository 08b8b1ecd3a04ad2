/*
 * config.c — queue and datacenter configuration: defaults, shape strings, the
 * consistency check and lookups (the YAML schema is in config_table.c).
 *
 * Design notes: what a table row (config_table.c) cannot express — unique names, a shape
 * string, queues of one playlist sharing a shape — lives in gf_match_config_check(),
 * which is also the tables' validate hook and runs again on every tick, so a hand-built
 * config is held to the same rules as a parsed one.
 */
#include "gamefn/match/config.h"

#include "internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- defaults and shapes ---------------------------------------------------- */

void gf_match_queue_defaults(gf_match_queue *q, const char *name, gf_match_mode mode,
                             const char *shape)
{
    memset(q, 0, sizeof *q);
    /* The YAML rows' defaults (config_table.c): one place for the reference constants. */
    (void)gf_mt_table_default(&gf_match_queue_table, NULL, q);
    q->name = name;
    q->mode = (int)mode;
    q->shape = shape;
    if (shape)
        (void)gf_match_shape_parse(shape, &q->teams, &q->team_size);
}

/* Reads a decimal 1..9999 at *p. */
static bool read_count(const char **p, int64_t *out)
{
    const char *s = *p;
    int64_t v = 0;
    if (*s < '1' || *s > '9')
        return false;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (*s - '0');
        if (v > 9999)
            return false;
    }
    *p = s;
    *out = v;
    return true;
}

gf_err gf_match_shape_parse(const char *shape, int64_t *teams, int64_t *team_size)
{
    int64_t t = 0, size = 0;
    if (!shape || !teams || !team_size)
        return GF_ERR_INVALID;
    const char *p = shape;
    if (strncmp(p, "ffa", 3) == 0) {
        p += 3;
        if (!read_count(&p, &t) || *p)
            return GF_ERR_INVALID;
        size = 1;
    } else {
        if (!read_count(&p, &size))
            return GF_ERR_INVALID;
        t = 1;
        while (*p == 'v') {
            int64_t next = 0;
            p++;
            if (!read_count(&p, &next) || next != size)
                return GF_ERR_INVALID;
            t++;
        }
        if (*p)
            return GF_ERR_INVALID;
    }
    if (t < 2 || t > GF_MATCH_MAX_TEAMS || size < 1 || size > GF_MATCH_MAX_TEAM_SIZE ||
        t * size > GF_MATCH_MAX_PLAYERS)
        return GF_ERR_INVALID;
    *teams = t;
    *team_size = size;
    return GF_OK;
}

/* ---- checks ------------------------------------------------------------------ */

static void why_set(char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void why_set(char *why, size_t size, const char *fmt, ...)
{
    if (!why || size == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

static bool name_ok(const char *s)
{
    return s && *s && strlen(s) <= 32;
}

static bool same_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Shape of q: from `shape` when set (the fields may not be derived yet). */
static bool queue_shape(const gf_match_queue *q, int64_t *teams, int64_t *size)
{
    if (q->shape)
        return gf_match_shape_parse(q->shape, teams, size) == GF_OK;
    *teams = q->teams;
    *size = q->team_size;
    return *teams >= 2 && *teams <= GF_MATCH_MAX_TEAMS && *size >= 1 &&
           *size <= GF_MATCH_MAX_TEAM_SIZE && *teams * *size <= GF_MATCH_MAX_PLAYERS;
}

bool gf_mt_dc_check(const gf_match_dc *dc, const char **key, char *why, size_t size)
{
    if (!name_ok(dc->name)) {
        *key = "name";
        why_set(why, size, "datacenter name must be 1..32 bytes");
        return false;
    }
    if (!name_ok(dc->region)) {
        *key = "region";
        why_set(why, size, "region must be 1..32 bytes");
        return false;
    }
    return true;
}

static bool finite_in(double v, double lo, double hi)
{
    return isfinite(v) && v >= lo && v <= hi;
}

bool gf_mt_queue_check(const gf_match_queue *q, const char **key, char *why, size_t size)
{
    int64_t teams = 0, team_size = 0;
    const gf_match_curve *c = &q->curve;

    *key = NULL;
    if (!name_ok(q->name)) {
        *key = "name";
        why_set(why, size, "queue name must be 1..32 bytes");
        return false;
    }
    if (q->playlist && strlen(q->playlist) > 32) {
        *key = "playlist";
        why_set(why, size, "playlist must be at most 32 bytes");
        return false;
    }
    if (q->mode < GF_MATCH_SBMM || q->mode > GF_MATCH_HYBRID) {
        *key = "mode";
        why_set(why, size, "mode must be sbmm, ping_first or hybrid");
        return false;
    }
    if (!queue_shape(q, &teams, &team_size)) {
        *key = "shape";
        why_set(why, size,
                "'%s' is not a shape (use NvN, NvNvN... or ffaN; at least 2 teams, "
                "at most %d players)",
                q->shape ? q->shape : "", GF_MATCH_MAX_PLAYERS);
        return false;
    }
    if (q->shape && (q->teams || q->team_size) &&
        (q->teams != teams || q->team_size != team_size)) {
        *key = "shape";
        why_set(why, size, "teams/team_size disagree with shape '%s'", q->shape);
        return false;
    }
    if (q->party_skill != GF_MATCH_PARTY_AVERAGE && q->party_skill != GF_MATCH_PARTY_MAX) {
        *key = "party_skill";
        why_set(why, size, "party_skill must be average or max");
        return false;
    }
    if (!finite_in(q->premade_bonus, 0, 10000)) {
        *key = "premade_bonus";
        why_set(why, size, "premade_bonus must be in 0..10000");
        return false;
    }
    if (!finite_in(c->skill_base, 0, 1e6) || !finite_in(c->skill_alpha, 0, 1e6) ||
        !finite_in(c->skill_gamma, 0.1, 4) || !finite_in(c->skill_cap, 0, 1e6) ||
        !finite_in(c->sigma_widen, 0, 100)) {
        *key = "skill_base";
        why_set(why, size,
                "skill curve out of range (base, alpha, cap 0..1e6; gamma 0.1..4; "
                "sigma_widen 0..100)");
        return false;
    }
    if (c->ping_base_ms < 0 || c->ping_base_ms > 5000 || c->ping_beta_ms < 0 ||
        c->ping_beta_ms > 5000 || c->ping_step_ms < 1 || c->ping_step_ms > 3600000 ||
        c->ping_cap_ms < 1 || c->ping_cap_ms > 5000) {
        *key = "ping_step";
        why_set(why, size,
                "ping curve out of range (base, beta 0..5000ms; step 1ms..1h; "
                "cap 1..5000ms)");
        return false;
    }
    if (q->ttl_ms < 1000 || q->ttl_ms > 86400000) {
        *key = "ticket_ttl";
        why_set(why, size, "ticket_ttl must be 1s..1d");
        return false;
    }
    if (q->population_floor < 0 || q->population_floor > 1000000000) {
        *key = "population_floor";
        why_set(why, size, "population_floor must be 0..1e9");
        return false;
    }
    if (q->match_attributes_len > GF_MATCH_MAX_ATTRS ||
        (q->match_attributes_len && !q->match_attributes)) {
        *key = "match_attributes";
        why_set(why, size, "at most %d match_attributes", GF_MATCH_MAX_ATTRS);
        return false;
    }
    for (size_t i = 0; i < q->match_attributes_len; i++) {
        const char *a = q->match_attributes[i];
        if (!a || !*a || strlen(a) > 128) {
            *key = "match_attributes";
            why_set(why, size, "match_attributes[%zu] must be 1..128 bytes", i);
            return false;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(a, q->match_attributes[j]) == 0) {
                *key = "match_attributes";
                why_set(why, size, "match_attributes lists '%s' twice", a);
                return false;
            }
        }
    }
    return true;
}

static bool attrs_same(const gf_match_queue *a, const gf_match_queue *b)
{
    if (a->match_attributes_len != b->match_attributes_len)
        return false;
    for (size_t i = 0; i < a->match_attributes_len; i++) {
        if (strcmp(a->match_attributes[i], b->match_attributes[i]) != 0)
            return false;
    }
    return true;
}

gf_err gf_match_config_check(const gf_match_config *cfg, char *why, size_t why_size)
{
    const char *key = NULL;
    char text[200];

    if (!cfg) {
        why_set(why, why_size, "no config");
        return GF_ERR_CONFIG;
    }
    if (cfg->datacenters_len < 1 || cfg->datacenters_len > GF_MATCH_MAX_DCS || !cfg->datacenters) {
        why_set(why, why_size, "datacenters: need 1..%d", GF_MATCH_MAX_DCS);
        return GF_ERR_CONFIG;
    }
    if (cfg->queues_len < 1 || cfg->queues_len > GF_MATCH_MAX_QUEUES || !cfg->queues) {
        why_set(why, why_size, "queues: need 1..%d", GF_MATCH_MAX_QUEUES);
        return GF_ERR_CONFIG;
    }
    if (cfg->search_window < 4 || cfg->search_window > 4096) {
        why_set(why, why_size, "search_window: must be 4..4096");
        return GF_ERR_CONFIG;
    }
    if (cfg->clock_skew_ms < 0 || cfg->clock_skew_ms > 600000) {
        why_set(why, why_size, "clock_skew: must be 0..10m");
        return GF_ERR_CONFIG;
    }
    for (size_t i = 0; i < cfg->datacenters_len; i++) {
        const gf_match_dc *dc = &cfg->datacenters[i];
        if (!gf_mt_dc_check(dc, &key, text, sizeof text)) {
            why_set(why, why_size, "datacenters[%zu].%s: %s", i, key, text);
            return GF_ERR_CONFIG;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(dc->name, cfg->datacenters[j].name) == 0) {
                why_set(why, why_size, "datacenters[%zu].name: '%s' is already datacenters[%zu]", i,
                        dc->name, j);
                return GF_ERR_CONFIG;
            }
        }
    }
    for (size_t i = 0; i < cfg->queues_len; i++) {
        const gf_match_queue *q = &cfg->queues[i];
        if (!gf_mt_queue_check(q, &key, text, sizeof text)) {
            why_set(why, why_size, "queues[%zu].%s: %s", i, key, text);
            return GF_ERR_CONFIG;
        }
        for (size_t j = 0; j < i; j++) {
            const gf_match_queue *o = &cfg->queues[j];
            if (strcmp(q->name, o->name) == 0) {
                why_set(why, why_size, "queues[%zu].name: '%s' is already queues[%zu]", i, q->name,
                        j);
                return GF_ERR_CONFIG;
            }
            if (!q->playlist || !*q->playlist || !same_str(q->playlist, o->playlist))
                continue;
            int64_t t1 = 0, s1 = 0, t2 = 0, s2 = 0;
            (void)queue_shape(q, &t1, &s1);
            (void)queue_shape(o, &t2, &s2);
            if (t1 != t2 || s1 != s2) {
                why_set(why, why_size,
                        "queues[%zu].shape: playlist '%s' mixes shapes (queue "
                        "'%s' differs)",
                        i, q->playlist, o->name);
                return GF_ERR_CONFIG;
            }
            if (!attrs_same(q, o)) {
                why_set(why, why_size,
                        "queues[%zu].match_attributes: playlist '%s' needs the "
                        "same list in every queue (queue '%s' differs)",
                        i, q->playlist, o->name);
                return GF_ERR_CONFIG;
            }
        }
    }
    return GF_OK;
}

gf_err gf_match_config_prepare(gf_match_config *cfg, char *why, size_t why_size)
{
    if (!cfg) {
        why_set(why, why_size, "no config");
        return GF_ERR_CONFIG;
    }
    for (size_t i = 0; cfg->queues && i < cfg->queues_len && i < GF_MATCH_MAX_QUEUES; i++) {
        gf_match_queue *q = &cfg->queues[i];
        int64_t t = 0, s = 0;
        if (q->shape && gf_match_shape_parse(q->shape, &t, &s) == GF_OK) {
            q->teams = t;
            q->team_size = s;
        }
    }
    if (cfg->search_window == 0)
        (void)gf_mt_table_default(&gf_match_config_table, "search_window", cfg);
    return gf_match_config_check(cfg, why, why_size);
}

/* ---- lookups -------------------------------------------------------------------- */

int gf_match_config_dc_index(const gf_match_config *cfg, const char *name)
{
    for (size_t i = 0; cfg && name && i < cfg->datacenters_len; i++) {
        if (strcmp(cfg->datacenters[i].name, name) == 0)
            return (int)i;
    }
    return -1;
}

int gf_match_config_queue_index(const gf_match_config *cfg, const char *name)
{
    for (size_t i = 0; cfg && name && i < cfg->queues_len; i++) {
        if (strcmp(cfg->queues[i].name, name) == 0)
            return (int)i;
    }
    return -1;
}

int gf_match_config_dc_region(const gf_match_config *cfg, size_t dc)
{
    int region = 0;
    if (!cfg || dc >= cfg->datacenters_len)
        return -1;
    for (size_t i = 0; i < dc; i++) {
        bool first = true;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(cfg->datacenters[j].region, cfg->datacenters[i].region) == 0) {
                first = false;
                break;
            }
        }
        if (!first)
            continue;
        if (strcmp(cfg->datacenters[i].region, cfg->datacenters[dc].region) == 0)
            return region;
        region++;
    }
    return region;
}

size_t gf_match_config_regions(const gf_match_config *cfg)
{
    size_t n = 0;
    for (size_t i = 0; cfg && i < cfg->datacenters_len; i++) {
        if ((size_t)gf_match_config_dc_region(cfg, i) == n)
            n++;
    }
    return n;
}

int gf_match_config_region_index(const gf_match_config *cfg, const char *name)
{
    for (size_t i = 0; cfg && name && i < cfg->datacenters_len; i++) {
        if (strcmp(cfg->datacenters[i].region, name) == 0)
            return gf_match_config_dc_region(cfg, i);
    }
    return -1;
}

const char *gf_match_mode_name(int mode)
{
    switch (mode) {
    case GF_MATCH_SBMM:
        return "sbmm";
    case GF_MATCH_PING_FIRST:
        return "ping_first";
    case GF_MATCH_HYBRID:
        return "hybrid";
    default:
        return "?";
    }
}
