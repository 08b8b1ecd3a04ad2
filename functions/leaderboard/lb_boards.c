/*
 * lb_boards.c — the boards a replica keeps in memory (lb.h): one gf_board per board and
 * period, fed with every write of bucket `leaderboard` in stream order.
 *
 * Design notes: a slot is (board config, period id, gf_board). There are few of them
 * (boards x periods kept), so they live in one array; the follower's writes mostly hit the
 * slot of the previous write, which is tried first. Period ids of one kind compare as
 * strings in time order ("2026-11-30" < "2026-12-01", "2026-W09" < "2026-W10"), so "kept"
 * is a string comparison with the oldest kept id, recomputed from the clock on trim.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/effect_record.h"
#include "gamefn/log.h"
#include "lb.h"

typedef struct lb_slot {
    const lb_board_config *cfg;
    char period[LB_PERIOD_ID_MAX + 1];
    gf_board *board;
} lb_slot;

struct lb_boards {
    const lb_config *cfg;
    lb_slot *slots;
    size_t n, cap;
    size_t last;                          /* the slot of the previous write */
    char (*oldest)[LB_PERIOD_ID_MAX + 1]; /* per configured board: its oldest kept period */
    uint64_t skipped;
};

static void compute_oldest(lb_boards *b, int64_t now_unix_ms)
{
    for (size_t i = 0; i < b->cfg->boards_len; i++) {
        gf_period p;
        gf_period_kind kind = (gf_period_kind)b->cfg->boards[i].period;
        b->oldest[i][0] = '\0';
        if (lb_period_back(kind, now_unix_ms, (unsigned)b->cfg->periods_kept - 1, &p) == GF_OK)
            snprintf(b->oldest[i], sizeof b->oldest[i], "%s", p.id);
    }
}

gf_err lb_boards_alloc(const lb_config *cfg, lb_boards **out)
{
    lb_boards *b = calloc(1, sizeof *b);
    if (!b || !(b->oldest = calloc(cfg->boards_len, sizeof *b->oldest))) {
        free(b);
        return GF_ERR_NOMEM;
    }
    b->cfg = cfg;
    compute_oldest(b, 0); /* nothing is too old until the first trim */
    *out = b;
    return GF_OK;
}

void lb_boards_free(lb_boards *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        gf_board_free(b->slots[i].board);
    free(b->slots);
    free(b->oldest);
    free(b);
}

static size_t board_index(const lb_boards *b, const lb_board_config *cfg)
{
    return (size_t)(cfg - b->cfg->boards);
}

static bool kept(const lb_boards *b, const lb_board_config *cfg, const char *period)
{
    return lb_period_id_ok((gf_period_kind)cfg->period, period) &&
           strcmp(period, b->oldest[board_index(b, cfg)]) >= 0;
}

const lb_config *lb_boards_config(const lb_boards *b)
{
    return b->cfg;
}

bool lb_boards_period_kept(const lb_boards *b, const lb_board_config *cfg, const char *period)
{
    return kept(b, cfg, period);
}

static lb_slot *find(lb_boards *b, const lb_board_config *cfg, const char *period)
{
    if (b->last < b->n && b->slots[b->last].cfg == cfg &&
        strcmp(b->slots[b->last].period, period) == 0)
        return &b->slots[b->last];
    for (size_t i = 0; i < b->n; i++) {
        if (b->slots[i].cfg == cfg && strcmp(b->slots[i].period, period) == 0) {
            b->last = i;
            return &b->slots[i];
        }
    }
    return NULL;
}

static lb_slot *find_or_add(lb_boards *b, const lb_board_config *cfg, const char *period)
{
    lb_slot *s = find(b, cfg, period);
    if (s)
        return s;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 8;
        lb_slot *slots = realloc(b->slots, cap * sizeof *slots);
        if (!slots)
            return NULL;
        b->slots = slots;
        b->cap = cap;
    }
    s = &b->slots[b->n];
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    snprintf(s->period, sizeof s->period, "%s", period);
    if (gf_board_alloc((gf_board_order)cfg->order, &s->board) != GF_OK)
        return NULL;
    b->last = b->n++;
    return s;
}

/* "<board>.<period>.<player>" into its parts (borrowed buffers). */
static bool split_key(const char *key, char *board, char *period, const char **player)
{
    const char *d1 = strchr(key, '.');
    const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d1 || !d2 || d1 == key || (size_t)(d1 - key) > LB_NAME_MAX || d2 == d1 + 1 ||
        (size_t)(d2 - d1 - 1) > LB_PERIOD_ID_MAX || !d2[1])
        return false;
    memcpy(board, key, (size_t)(d1 - key));
    board[d1 - key] = '\0';
    memcpy(period, d1 + 1, (size_t)(d2 - d1 - 1));
    period[d2 - d1 - 1] = '\0';
    *player = d2 + 1;
    return true;
}

void lb_boards_apply(lb_boards *b, const char *key, const uint8_t *value, size_t len, bool deleted)
{
    char board[LB_NAME_MAX + 1], period[LB_PERIOD_ID_MAX + 1];
    const char *player = NULL;
    const lb_board_config *cfg = NULL;
    if (!split_key(key, board, period, &player) || !(cfg = lb_config_board(b->cfg, board)) ||
        !kept(b, cfg, period)) {
        b->skipped++;
        return;
    }
    bool has = false;
    int64_t score = 0, updated = 0;
    if (!deleted) {
        uint8_t *effect = NULL;
        size_t elen = 0;
        gf_err err = gf_effect_record_peek(value, len, NULL, &effect, &elen);
        if (err == GF_OK)
            err = lb_score_decode(effect, elen, &has, &score, &updated);
        free(effect);
        if (err != GF_OK) {
            b->skipped++;
            return;
        }
    }
    lb_slot *s = has ? find_or_add(b, cfg, period) : find(b, cfg, period);
    if (!s)
        return; /* nothing to remove, or out of memory (logged by the caller's counts) */
    if (has) {
        if (gf_board_upsert(s->board, player, score, updated) != GF_OK)
            b->skipped++;
    } else {
        gf_board_remove(s->board, player);
    }
}

void lb_boards_trim(lb_boards *b, int64_t now_unix_ms)
{
    compute_oldest(b, now_unix_ms);
    size_t kept_n = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (kept(b, b->slots[i].cfg, b->slots[i].period))
            b->slots[kept_n++] = b->slots[i];
        else
            gf_board_free(b->slots[i].board);
    }
    b->n = kept_n;
    b->last = 0;
}

size_t lb_boards_players(const lb_boards *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++)
        n += gf_board_size(b->slots[i].board);
    return n;
}

uint64_t lb_boards_skipped(const lb_boards *b)
{
    return b->skipped;
}

const gf_board *lb_boards_get(const lb_boards *b, const char *name, const char *period)
{
    for (size_t i = 0; i < b->n; i++) {
        if (strcmp(b->slots[i].cfg->name, name) == 0 && strcmp(b->slots[i].period, period) == 0)
            return b->slots[i].board;
    }
    return NULL;
}

/* ---- snapshots ---------------------------------------------------------------------- */

void lb_chunks_free(lb_chunk *chunks, size_t n)
{
    for (size_t i = 0; chunks && i < n; i++)
        free(chunks[i].data);
    free(chunks);
}

gf_err lb_boards_snapshot(const lb_boards *b, size_t chunk_entries, lb_chunk **chunks, size_t *n)
{
    size_t total = 0, at = 0;
    *chunks = NULL;
    *n = 0;
    for (size_t i = 0; i < b->n; i++) {
        size_t size = gf_board_size(b->slots[i].board);
        total += size ? (size + chunk_entries - 1) / chunk_entries : 1;
    }
    lb_chunk *out = calloc(total ? total : 1, sizeof *out);
    if (!out)
        return GF_ERR_NOMEM;
    gf_err err = GF_OK;
    for (size_t i = 0; err == GF_OK && i < b->n; i++) {
        const lb_slot *s = &b->slots[i];
        size_t size = gf_board_size(s->board);
        for (uint64_t first = 1; err == GF_OK && (first <= size || first == 1);
             first += chunk_entries) {
            lb_chunk *c = &out[at++];
            snprintf(c->board, sizeof c->board, "%s", s->cfg->name);
            snprintf(c->period, sizeof c->period, "%s", s->period);
            c->players = size;
            err = gf_board_snapshot_encode(s->board, first, chunk_entries, &c->data, &c->len);
            if (size == 0)
                break;
        }
    }
    if (err != GF_OK) {
        lb_chunks_free(out, at);
        return err;
    }
    *chunks = out;
    *n = at;
    return GF_OK;
}

gf_err lb_boards_load_chunk(lb_boards *b, const char *board, const char *period,
                            const uint8_t *data, size_t len)
{
    const lb_board_config *cfg = lb_config_board(b->cfg, board);
    if (!cfg || !lb_period_id_ok((gf_period_kind)cfg->period, period))
        return GF_ERR_NOT_FOUND; /* a board no longer configured: skipped */
    lb_slot *s = find_or_add(b, cfg, period);
    if (!s)
        return GF_ERR_NOMEM;
    uint64_t total = 0;
    return gf_board_snapshot_load(s->board, data, len, &total);
}
