/*
 * config.c — the functions.matcher section, its tick groups, and loading it from the
 * file another function was started with (see gamefn/tickets/config.h).
 */
#include "gamefn/tickets/config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static bool is_playlist(const gf_match_config *m, const char *name)
{
    for (size_t i = 0; i < m->queues_len; i++) {
        const char *pl = m->queues[i].playlist;
        if (pl && pl[0] && strcmp(pl, name) == 0)
            return true;
    }
    return false;
}

/* The tick group name of queue i: its playlist, else its own name. */
static const char *group_name(const gf_match_queue *q)
{
    return q->playlist && q->playlist[0] ? q->playlist : q->name;
}

static bool mm_validate(const void *obj, gf_cfg_problem *problem)
{
    const gf_mm_config *c = obj;
    const gf_match_config *m = &c->matchmaking;
    for (size_t i = 0; i < m->queues_len; i++) {
        const gf_match_queue *q = &m->queues[i];
        if ((!q->playlist || !q->playlist[0]) && is_playlist(m, q->name)) {
            problem->key = "matchmaking";
            snprintf(problem->text, sizeof problem->text,
                     "queue %s has no playlist but is named like a playlist: tick groups "
                     "(playlists and queues without one) need distinct names",
                     q->name);
            return false;
        }
        if (!gf_tk_token_ok(q->name, GF_WIRE_NAME_MAX) ||
            !gf_tk_token_ok(group_name(q), GF_WIRE_NAME_MAX)) {
            problem->key = "matchmaking";
            snprintf(problem->text, sizeof problem->text,
                     "queue %s: queue and playlist names must be tokens of 1..%d bytes of "
                     "[A-Za-z0-9_-] (they appear in subjects and on the wire)",
                     q->name, GF_WIRE_NAME_MAX);
            return false;
        }
    }
    for (size_t i = 0; i < m->datacenters_len; i++) {
        if (!gf_tk_token_ok(m->datacenters[i].name, GF_WIRE_NAME_MAX) ||
            !gf_tk_token_ok(m->datacenters[i].region, GF_WIRE_NAME_MAX)) {
            problem->key = "matchmaking";
            snprintf(problem->text, sizeof problem->text,
                     "datacenter %s: datacenter and region names must be tokens of 1..%d bytes",
                     m->datacenters[i].name, GF_WIRE_NAME_MAX);
            return false;
        }
    }
    for (size_t g = 0; g < c->groups_len; g++) {
        bool known = is_playlist(m, c->groups[g]);
        for (size_t i = 0; i < m->queues_len && !known; i++)
            known = strcmp(group_name(&m->queues[i]), c->groups[g]) == 0;
        if (!known) {
            problem->key = "groups";
            snprintf(problem->text, sizeof problem->text,
                     "'%s' is neither a playlist nor a queue without one", c->groups[g]);
            return false;
        }
    }
    return true;
}

static const gf_cfg_field mm_fields[] = {
    {.key = "claim_lease",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_mm_config, claim_lease_ms),
     .def = "10s",
     .min = 1000,
     .max = 600000,
     .help = "a claim's lease: if its match is not committed by then, any matcher returns the "
             "tickets to the pool (longer than the allocation deadline)"},
    {.key = "status_interval",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_mm_config, status_interval_ms),
     .def = "2s",
     .min = 100,
     .max = 60000,
     .help = "a QUEUED ticket gets a status push (reason, limits, estimated wait) at most this "
             "often, and at once when its reason changes"},
    {.key = "wait_half_life",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_mm_config, wait_half_life_ms),
     .def = "10m",
     .min = 1000,
     .max = 86400000,
     .help = "the wait estimator forgets half of what it learned in this time"},
    {.key = "groups",
     .type = GF_CFG_STRING_LIST,
     .offset = offsetof(gf_mm_config, groups),
     .count_offset = offsetof(gf_mm_config, groups_len),
     .min = 0,
     .max = GF_MATCH_MAX_QUEUES,
     .help = "tick groups (playlists, queues without one) this replica matches; empty = all"},
    {.key = "matchmaking",
     .type = GF_CFG_OBJECT,
     .offset = offsetof(gf_mm_config, matchmaking),
     .required = true,
     .sub = &gf_match_config_table,
     .help = "datacenters and queues (docs/MATCHMAKING.md, Queue configuration)"},
};

const gf_cfg_table gf_mm_config_table = {
    .name = "matcher",
    .size = sizeof(gf_mm_config),
    .fields = mm_fields,
    .nfields = sizeof mm_fields / sizeof mm_fields[0],
    .validate = mm_validate,
};

gf_err gf_mm_tables_build(const gf_match_config *src, gf_mm_tables *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    if (src->queues_len > GF_MATCH_MAX_QUEUES || src->datacenters_len > GF_MATCH_MAX_DCS) {
        snprintf(why, why_size, "matchmaking: too many queues or datacenters");
        return GF_ERR_CONFIG;
    }
    out->cfg = *src;
    memcpy(out->queues, src->queues, src->queues_len * sizeof *src->queues);
    memcpy(out->dcs, src->datacenters, src->datacenters_len * sizeof *src->datacenters);
    out->cfg.queues = out->queues;
    out->cfg.datacenters = out->dcs;
    gf_err err = gf_match_config_prepare(&out->cfg, why, why_size);
    if (err != GF_OK)
        return err;
    for (size_t i = 0; i < out->cfg.queues_len; i++) {
        const char *name = group_name(&out->queues[i]);
        int g = gf_mm_group_index(out, name);
        if (g < 0) {
            g = (int)out->groups_len++;
            out->groups[g].name = name;
        }
        gf_mm_group *grp = &out->groups[g];
        grp->queues[grp->queues_len++] = (uint32_t)i;
        out->queue_group[i] = g;
    }
    return GF_OK;
}

int gf_mm_group_index(const gf_mm_tables *t, const char *name)
{
    for (size_t g = 0; name && g < t->groups_len; g++) {
        if (strcmp(t->groups[g].name, name) == 0)
            return (int)g;
    }
    return -1;
}

gf_err gf_mm_config_load(const char *path, gf_config **out, gf_config_error *err)
{
    const gf_config_section section = {.name = "matcher", .table = &gf_mm_config_table};
    return gf_config_load(path, &section, out, err);
}
