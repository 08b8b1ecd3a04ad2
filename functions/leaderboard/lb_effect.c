/*
 * lb_effect.c — the leaderboard's effect as consumer framework ops (gamefn/consumer.h):
 * a ScoreEvent changes one key, "<board>.<period>.<player_id>", whose state is the
 * player's score there.
 *
 * Design notes: the key depends only on the event (its board, its occurred_unix_ms and
 * its player), never on the consumer's clock, so a redelivered or replayed event lands
 * on the same key and the key's marks decide. An event for a board that is not in
 * config has no key: it is dead-lettered ("unknown board"), like a malformed one. A sum
 * beyond +-2^62 is refused by gf_score_apply and dead-lettered with its reason, the score
 * staying as it was.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/util.h"
#include "lb.h"

typedef struct lb_state {
    bool has;
    int64_t score;
    int64_t updated_unix_ms;
    const lb_board_config *board;
} lb_state;

gf_err lb_score_decode(const uint8_t *buf, size_t len, bool *has, int64_t *score,
                       int64_t *updated_unix_ms)
{
    *has = false;
    *score = *updated_unix_ms = 0;
    if (len == 0)
        return GF_OK;
    Gamefn__V1__LeaderboardScore *m = gamefn__v1__leaderboard_score__unpack(NULL, len, buf);
    if (!m)
        return GF_ERR_INVALID;
    gf_err err =
        m->score > GF_BOARD_SCORE_MAX || m->score < -GF_BOARD_SCORE_MAX || m->updated_unix_ms < 0
            ? GF_ERR_INVALID
            : GF_OK;
    if (err == GF_OK) {
        *has = true;
        *score = m->score;
        *updated_unix_ms = m->updated_unix_ms;
    }
    gamefn__v1__leaderboard_score__free_unpacked(m, NULL);
    return err;
}

/* "<board>." and "<period>." of a key, into the caller's buffers. */
static const lb_board_config *board_of_key(const lb_config *cfg, const char *key)
{
    char name[LB_NAME_MAX + 1];
    const char *dot = strchr(key, '.');
    size_t n = dot ? (size_t)(dot - key) : 0;
    if (n == 0 || n > LB_NAME_MAX)
        return NULL;
    memcpy(name, key, n);
    name[n] = '\0';
    return lb_config_board(cfg, name);
}

static gf_err lb_keys(void *ctx, const gf_consumer_event *e, gf_consumer_keys *out, char *why,
                      size_t why_size)
{
    const lb_config *cfg = ctx;
    if (e->ev->payload_case != GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE)
        return GF_OK; /* not ours */
    const char *name = e->ev->score->board[0] ? e->ev->score->board : "global";
    const lb_board_config *b = lb_config_board(cfg, name);
    if (!b) {
        snprintf(why, why_size, "score.board: unknown board '%s'", name);
        return GF_ERR_INVALID;
    }
    gf_period p;
    if (gf_period_of((gf_period_kind)b->period, e->ev->occurred_unix_ms, &p) != GF_OK) {
        snprintf(why, why_size, "occurred_unix_ms: %lld is beyond year 9999",
                 (long long)e->ev->occurred_unix_ms);
        return GF_ERR_INVALID;
    }
    snprintf(out->key[0], GF_CONSUMER_KEY_MAX, "%s.%s.%s", name, p.id, e->ev->player_id);
    out->n = 1;
    return GF_OK;
}

static gf_err lb_load(void *ctx, const char *key, const uint8_t *effect, size_t len, void **state)
{
    lb_state *s = calloc(1, sizeof *s);
    if (!s)
        return GF_ERR_NOMEM;
    s->board = board_of_key(ctx, key);
    gf_err err = s->board ? lb_score_decode(effect, len, &s->has, &s->score, &s->updated_unix_ms)
                          : GF_ERR_INVALID;
    if (err != GF_OK) {
        free(s);
        return err;
    }
    *state = s;
    return GF_OK;
}

static gf_err lb_apply(void *ctx, const char *key, void *state, const gf_consumer_event *e,
                       char *why, size_t why_size)
{
    (void)ctx;
    (void)key;
    lb_state *s = state;
    int64_t score = 0;
    bool changed = false;
    gf_err err = gf_score_apply((gf_score_op)s->board->op, (gf_board_order)s->board->order,
                                s->has ? &s->score : NULL, e->ev->score->delta, &score, &changed);
    if (err != GF_OK) {
        snprintf(why, why_size, "score.delta: %lld on score %lld leaves +-2^62",
                 (long long)e->ev->score->delta, (long long)s->score);
        return GF_ERR_PERMANENT;
    }
    if (changed) {
        s->has = true;
        s->score = score;
        s->updated_unix_ms = e->ev->occurred_unix_ms;
    }
    return GF_OK;
}

static gf_err lb_store(void *ctx, const char *key, const void *state, uint8_t **out, size_t *len)
{
    (void)ctx;
    (void)key;
    const lb_state *s = state;
    *out = NULL;
    *len = 0;
    if (!s->has)
        return GF_OK;
    Gamefn__V1__LeaderboardScore m = GAMEFN__V1__LEADERBOARD_SCORE__INIT;
    m.score = s->score;
    m.updated_unix_ms = s->updated_unix_ms;
    return gf_pack(&m.base, out, len);
}

static void lb_drop(void *ctx, void *state)
{
    (void)ctx;
    free(state);
}

const gf_consumer_ops lb_effect_ops = {
    .keys = lb_keys,
    .load = lb_load,
    .apply = lb_apply,
    .store = lb_store,
    .drop = lb_drop,
};
