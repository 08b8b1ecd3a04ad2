/*
 * config_table.c — the YAML schema of a gf_match_config: one table row per option (key,
 * type, default, bounds), as in the runtime's own sections, so the runtime parser reports
 * every per-key problem with file:line:column and the key's name. Cross-field rules are
 * the tables' validate hooks, which call the same checks as gf_match_config_check().
 *
 * The rows' defaults are the only place the defaults are written: a queue built in code
 * (gf_match_queue_defaults) and the search window of a hand-built config take theirs
 * from these rows (gf_mt_table_default), so YAML and code cannot disagree.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/match/config.h"

#include "internal.h"

/* ---- schema tables --------------------------------------------------------- */

static const gf_cfg_enum_value mode_names[] = {
    {"sbmm", GF_MATCH_SBMM},
    {"ping_first", GF_MATCH_PING_FIRST},
    {"hybrid", GF_MATCH_HYBRID},
    {NULL, 0},
};

static const gf_cfg_enum_value party_names[] = {
    {"average", GF_MATCH_PARTY_AVERAGE},
    {"max", GF_MATCH_PARTY_MAX},
    {NULL, 0},
};

static const gf_cfg_field dc_fields[] = {
    {.key = "name",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_match_dc, name),
     .required = true,
     .help = "datacenter name, as clients report pings to it"},
    {.key = "region",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_match_dc, region),
     .required = true,
     .help = "region it belongs to (population is counted per region)"},
};

static bool dc_validate(const void *obj, gf_cfg_problem *problem);
static bool queue_validate(const void *obj, gf_cfg_problem *problem);
static bool config_validate(const void *obj, gf_cfg_problem *problem);

const gf_cfg_table gf_match_dc_table = {
    .name = "datacenter",
    .size = sizeof(gf_match_dc),
    .fields = dc_fields,
    .nfields = sizeof dc_fields / sizeof dc_fields[0],
    .validate = dc_validate,
};

#define QF(member) offsetof(gf_match_queue, member)

static const gf_cfg_field queue_fields[] = {
    {.key = "name",
     .type = GF_CFG_STRING,
     .offset = QF(name),
     .required = true,
     .help = "queue name, unique"},
    {.key = "playlist",
     .type = GF_CFG_STRING,
     .offset = QF(playlist),
     .help = "merge group: queues of one playlist share a pool in low-population regions"},
    {.key = "mode",
     .type = GF_CFG_ENUM,
     .offset = QF(mode),
     .def = "hybrid",
     .enums = mode_names,
     .help = "sbmm, ping_first or hybrid"},
    {.key = "shape",
     .type = GF_CFG_STRING,
     .offset = QF(shape),
     .required = true,
     .help = "teams x team size: 1v1, 5v5, 4v4v4, ffa16"},
    {.key = "party_skill",
     .type = GF_CFG_ENUM,
     .offset = QF(party_skill),
     .def = "average",
     .enums = party_names,
     .help = "how a party's skill is aggregated: average or max"},
    {.key = "premade_bonus",
     .type = GF_CFG_DOUBLE,
     .offset = QF(premade_bonus),
     .def = "0",
     .min = 0,
     .max = 10000,
     .help = "skill added to a party per member beyond the first"},
    {.key = "skill_base",
     .type = GF_CFG_DOUBLE,
     .offset = QF(curve.skill_base),
     .def = "50",
     .min = 0,
     .max = 1e6,
     .help = "allowed skill gap at t = 0"},
    {.key = "skill_alpha",
     .type = GF_CFG_DOUBLE,
     .offset = QF(curve.skill_alpha),
     .def = "4.5",
     .min = 0,
     .max = 1e6,
     .help = "skill gap widening coefficient"},
    {.key = "skill_gamma",
     .type = GF_CFG_DOUBLE,
     .offset = QF(curve.skill_gamma),
     .def = "1.35",
     .min = 0.1,
     .max = 4,
     .help = "skill gap widening exponent"},
    {.key = "skill_cap",
     .type = GF_CFG_DOUBLE,
     .offset = QF(curve.skill_cap),
     .def = "600",
     .min = 0,
     .max = 1e6,
     .help = "largest allowed skill gap"},
    {.key = "sigma_widen",
     .type = GF_CFG_DOUBLE,
     .offset = QF(curve.sigma_widen),
     .def = "0",
     .min = 0,
     .max = 100,
     .help = "skill gap added per unit of rating uncertainty (sigma)"},
    {.key = "ping_base",
     .type = GF_CFG_DURATION,
     .offset = QF(curve.ping_base_ms),
     .def = "35ms",
     .min = 0,
     .max = 5000,
     .help = "allowed ping at t = 0"},
    {.key = "ping_beta",
     .type = GF_CFG_DURATION,
     .offset = QF(curve.ping_beta_ms),
     .def = "15ms",
     .min = 0,
     .max = 5000,
     .help = "allowed ping added per step"},
    {.key = "ping_step",
     .type = GF_CFG_DURATION,
     .offset = QF(curve.ping_step_ms),
     .def = "4s",
     .min = 1,
     .max = 3600000,
     .help = "time between ping widening steps"},
    {.key = "ping_cap",
     .type = GF_CFG_DURATION,
     .offset = QF(curve.ping_cap_ms),
     .def = "180ms",
     .min = 1,
     .max = 5000,
     .help = "largest allowed ping"},
    {.key = "ticket_ttl",
     .type = GF_CFG_DURATION,
     .offset = QF(ttl_ms),
     .def = "5m",
     .min = 1000,
     .max = 86400000,
     .help = "a ticket older than this is never matched"},
    {.key = "population_floor",
     .type = GF_CFG_INT,
     .offset = QF(population_floor),
     .def = "1000",
     .min = 0,
     .max = 1e9,
     .help = "players per region below which the playlist's queues merge (0 = never)"},
    {.key = "match_attributes",
     .type = GF_CFG_STRING_LIST,
     .offset = QF(match_attributes),
     .count_offset = QF(match_attributes_len),
     .min = 0,
     .max = GF_MATCH_MAX_ATTRS,
     .help = "ticket attributes every member of a match must share, e.g. [platform]"},
};

const gf_cfg_table gf_match_queue_table = {
    .name = "queue",
    .size = sizeof(gf_match_queue),
    .fields = queue_fields,
    .nfields = sizeof queue_fields / sizeof queue_fields[0],
    .validate = queue_validate,
};

static const gf_cfg_field config_fields[] = {
    {.key = "datacenters",
     .type = GF_CFG_OBJECT_LIST,
     .offset = offsetof(gf_match_config, datacenters),
     .count_offset = offsetof(gf_match_config, datacenters_len),
     .required = true,
     .min = 1,
     .max = GF_MATCH_MAX_DCS,
     .sub = &gf_match_dc_table,
     .help = "datacenters and regions"},
    {.key = "queues",
     .type = GF_CFG_OBJECT_LIST,
     .offset = offsetof(gf_match_config, queues),
     .count_offset = offsetof(gf_match_config, queues_len),
     .required = true,
     .min = 1,
     .max = GF_MATCH_MAX_QUEUES,
     .sub = &gf_match_queue_table,
     .help = "matchmaking queues"},
    {.key = "search_window",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_match_config, search_window),
     .def = "32",
     .min = 4,
     .max = 4096,
     .help = "a seed's walk looks at up to 4x this many tickets (at least 2x a match's players)"},
    {.key = "clock_skew",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_match_config, clock_skew_ms),
     .def = "5s",
     .min = 0,
     .max = 600000,
     .help = "queue times this far in the future count as 'just queued'"},
};

const gf_cfg_table gf_match_config_table = {
    .name = "matchmaking",
    .size = sizeof(gf_match_config),
    .fields = config_fields,
    .nfields = sizeof config_fields / sizeof config_fields[0],
    .validate = config_validate,
};

/* ---- validate hooks (YAML) --------------------------------------------------- */

static bool dc_validate(const void *obj, gf_cfg_problem *problem)
{
    return gf_mt_dc_check(obj, &problem->key, problem->text, sizeof problem->text);
}

static bool queue_validate(const void *obj, gf_cfg_problem *problem)
{
    return gf_mt_queue_check(obj, &problem->key, problem->text, sizeof problem->text);
}

static bool config_validate(const void *obj, gf_cfg_problem *problem)
{
    problem->key = NULL;
    return gf_match_config_check(obj, problem->text, sizeof problem->text) == GF_OK;
}

/* ---- defaults ------------------------------------------------------------------ */

bool gf_mt_table_default(const gf_cfg_table *t, const char *key, void *obj)
{
    for (size_t i = 0; i < t->nfields; i++) {
        const gf_cfg_field *f = &t->fields[i];
        if ((key && strcmp(f->key, key) != 0) || !f->def)
            continue;
        char *at = (char *)obj + f->offset, *end = NULL;
        switch (f->type) {
        case GF_CFG_DOUBLE: {
            double v = strtod(f->def, &end);
            memcpy(at, &v, sizeof v);
            break;
        }
        case GF_CFG_INT: {
            int64_t v = strtoll(f->def, &end, 10);
            memcpy(at, &v, sizeof v);
            break;
        }
        case GF_CFG_DURATION: {
            int64_t v = 0;
            if (gf_config_parse_duration_ms(f->def, &v) != GF_OK)
                return false;
            memcpy(at, &v, sizeof v);
            break;
        }
        case GF_CFG_ENUM: {
            const gf_cfg_enum_value *e = f->enums;
            while (e->name && strcmp(e->name, f->def) != 0)
                e++;
            if (!e->name)
                return false;
            memcpy(at, &e->value, sizeof e->value);
            break;
        }
        default:
            return false; /* no row of these tables has another kind of default */
        }
        if (end && *end)
            return false;
        if (key)
            return true;
    }
    return !key;
}
