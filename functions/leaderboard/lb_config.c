/* lb_config.c — the table of functions.leaderboard and period helpers (lb.h). */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gamefn/util.h"
#include "lb.h"

static const gf_cfg_enum_value ops[] = {
    {"best", GF_SCORE_BEST}, {"set", GF_SCORE_SET}, {"incr", GF_SCORE_INCR}, {NULL, 0}};
static const gf_cfg_enum_value orders[] = {
    {"descending", GF_BOARD_DESCENDING}, {"ascending", GF_BOARD_ASCENDING}, {NULL, 0}};
static const gf_cfg_enum_value periods[] = {
    {"none", GF_PERIOD_NONE}, {"daily", GF_PERIOD_DAILY}, {"weekly", GF_PERIOD_WEEKLY}, {NULL, 0}};

static const gf_cfg_field board_fields[] = {
    {.key = "name",
     .type = GF_CFG_STRING,
     .offset = offsetof(lb_board_config, name),
     .required = true,
     .help = "board name: the ScoreEvent's `board` (1..32 of [A-Za-z0-9_-])"},
    {.key = "operator",
     .type = GF_CFG_ENUM,
     .offset = offsetof(lb_board_config, op),
     .def = "incr",
     .enums = ops,
     .help = "best: keep the better value; set: the last value; incr: add the delta"},
    {.key = "order",
     .type = GF_CFG_ENUM,
     .offset = offsetof(lb_board_config, order),
     .def = "descending",
     .enums = orders,
     .help = "descending: higher score ranks first; ascending: lower first"},
    {.key = "period",
     .type = GF_CFG_ENUM,
     .offset = offsetof(lb_board_config, period),
     .def = "none",
     .enums = periods,
     .help = "none: one all-time board; daily / weekly: a new board each UTC day / ISO week"},
};

static bool board_validate(const void *obj, gf_cfg_problem *problem)
{
    const lb_board_config *b = obj;
    if (gf_token_len(b->name, LB_NAME_MAX) == 0) {
        problem->key = "name";
        snprintf(problem->text, sizeof problem->text, "must be 1..32 bytes of [A-Za-z0-9_-]");
        return false;
    }
    return true;
}

static const gf_cfg_table board_table = {
    .name = "board",
    .size = sizeof(lb_board_config),
    .fields = board_fields,
    .nfields = sizeof board_fields / sizeof board_fields[0],
    .validate = board_validate,
};

static const gf_cfg_field fields[] = {
    {.key = "boards",
     .type = GF_CFG_OBJECT_LIST,
     .offset = offsetof(lb_config, boards),
     .count_offset = offsetof(lb_config, boards_len),
     .required = true,
     .min = 1,
     .max = LB_BOARDS_MAX,
     .sub = &board_table,
     .help = "the boards: name, operator, order, period"},
    {.key = "periods_kept",
     .type = GF_CFG_INT,
     .offset = offsetof(lb_config, periods_kept),
     .def = "2",
     .min = 2,
     .max = 60,
     .help = "periods of a daily or weekly board kept in memory and answerable: the "
             "current one and those before it (2 = current and previous)"},
    {.key = "snapshot_interval",
     .type = GF_CFG_DURATION,
     .offset = offsetof(lb_config, snapshot_interval_ms),
     .def = "1m",
     .min = 1000,
     .max = 86400000,
     .help = "one replica (by lease) writes the boards to stream LB_SNAPSHOTS this often "
             "(when they changed), so a starting replica replays only what came after"},
    {.key = "snapshot_chunk",
     .type = GF_CFG_INT,
     .offset = offsetof(lb_config, snapshot_chunk),
     .def = "10000",
     .min = 1,
     .max = 20000,
     .help = "players per snapshot message (about 30 bytes each; keep under max_payload)"},
    {.key = "follow_batch",
     .type = GF_CFG_INT,
     .offset = offsetof(lb_config, follow_batch),
     .def = "1024",
     .min = 1,
     .max = 10000,
     .help = "KV_leaderboard messages fetched at once by each replica's follower"},
    {.key = "events",
     .type = GF_CFG_OBJECT,
     .offset = offsetof(lb_config, events),
     .sub = &gf_consumer_options_table,
     .help = "the event consumer's settings (window, horizons, cache)"},
};

static bool validate(const void *obj, gf_cfg_problem *problem)
{
    const lb_config *c = obj;
    for (size_t i = 0; i < c->boards_len; i++) {
        for (size_t j = 0; j < i; j++) {
            if (strcmp(c->boards[i].name, c->boards[j].name) == 0) {
                problem->key = "boards";
                snprintf(problem->text, sizeof problem->text, "board '%.32s' is listed twice",
                         c->boards[i].name);
                return false;
            }
        }
    }
    return true;
}

const gf_cfg_table lb_config_table = {
    .name = "leaderboard",
    .size = sizeof(lb_config),
    .fields = fields,
    .nfields = sizeof fields / sizeof fields[0],
    .validate = validate,
};

const lb_board_config *lb_config_board(const lb_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->boards_len; i++) {
        if (strcmp(cfg->boards[i].name, name) == 0)
            return &cfg->boards[i];
    }
    return NULL;
}

/* ---- periods ------------------------------------------------------------------------ */

#define DAY_MS INT64_C(86400000)

gf_err lb_period_back(gf_period_kind kind, int64_t now_unix_ms, unsigned back, gf_period *out)
{
    gf_err err = gf_period_of(kind, now_unix_ms, out);
    for (unsigned i = 0; err == GF_OK && i < back && kind != GF_PERIOD_NONE; i++)
        err = out->start_unix_ms > 0 ? gf_period_of(kind, out->start_unix_ms - 1, out)
                                     : GF_ERR_INVALID;
    return err;
}

static bool digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
    }
    return true;
}

bool lb_period_id_ok(gf_period_kind kind, const char *id)
{
    size_t n = strlen(id);
    switch (kind) {
    case GF_PERIOD_NONE:
        return strcmp(id, "all") == 0;
    case GF_PERIOD_DAILY:
        return n == 10 && digits(id, 4) && id[4] == '-' && digits(id + 5, 2) && id[7] == '-' &&
               digits(id + 8, 2);
    case GF_PERIOD_WEEKLY:
        return n == 8 && digits(id, 4) && id[4] == '-' && id[5] == 'W' && digits(id + 6, 2);
    default:
        return false;
    }
}
