/* score.c — the board operators best, set and incr (see score.h). */
#include "score.h"

#include <stddef.h>

static bool in_range(int64_t v)
{
    return v >= -GF_BOARD_SCORE_MAX && v <= GF_BOARD_SCORE_MAX;
}

gf_err gf_score_apply(gf_score_op op, gf_board_order order, const int64_t *old, int64_t value,
                      int64_t *out, bool *changed)
{
    *changed = false;
    if (!in_range(value) || (old != NULL && !in_range(*old)))
        return GF_ERR_INVALID;
    int64_t base = old != NULL ? *old : 0;
    switch (op) {
    case GF_SCORE_BEST:
        *out = old == NULL                                                    ? value
               : (order == GF_BOARD_DESCENDING ? value > base : value < base) ? value
                                                                              : base;
        break;
    case GF_SCORE_SET:
        *out = value;
        break;
    case GF_SCORE_INCR:
        if ((value > 0 && base > GF_BOARD_SCORE_MAX - value) ||
            (value < 0 && base < -GF_BOARD_SCORE_MAX - value))
            return GF_ERR_INVALID;
        *out = base + value;
        break;
    default:
        return GF_ERR_INVALID;
    }
    *changed = old == NULL || *out != base;
    return GF_OK;
}

gf_err gf_board_apply(gf_board *b, gf_score_op op, const char *player_id, int64_t value,
                      int64_t updated_unix_ms)
{
    gf_board_entry e;
    gf_err err = gf_board_get(b, player_id, &e);
    if (err != GF_OK && err != GF_ERR_NOT_FOUND)
        return err;
    int64_t next = 0;
    bool changed = false;
    err = gf_score_apply(op, gf_board_order_get(b), err == GF_OK ? &e.score : NULL, value, &next,
                         &changed);
    if (err != GF_OK || !changed)
        return err;
    return gf_board_upsert(b, player_id, next, updated_unix_ms);
}
