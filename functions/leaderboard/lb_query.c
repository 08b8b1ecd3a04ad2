/*
 * lb_query.c — one LeaderboardQueryRequest against the boards (lb.h).
 *
 * Answers (docs/PROTOCOL.md §10): top, page, around and rank, for the board's current
 * period, the previous one or an explicit id. A known board with no score yet in that
 * period answers OK with no entries and total_players 0; an unknown board is NOT_FOUND
 * (field "board"); a period that is not kept is NOT_FOUND (field "period"); a page past
 * the end is OK with no entries and total_players; around/rank of a player without a
 * score is NOT_FOUND (field "<query>.player_id").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/limits.h"
#include "gamefn/util.h"
#include "gamefn/v1/error.pb-c.h"
#include "lb.h"

enum {
    CODE_INVALID = GAMEFN__V1__ERROR_CODE__ERROR_CODE_INVALID_ARGUMENT,
    CODE_NOT_FOUND = GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND,
};

typedef struct answer {
    int *code;
    char *field, *why;
    size_t field_size, why_size;
} answer;

static gf_err fail(const answer *a, int code, const char *field, const char *why)
{
    *a->code = code;
    snprintf(a->field, a->field_size, "%s", field);
    snprintf(a->why, a->why_size, "%s", why);
    return code == CODE_NOT_FOUND ? GF_ERR_NOT_FOUND : GF_ERR_INVALID;
}

/* The period id asked for: "" / "current", "previous", or an id of the board's kind. */
static gf_err resolve_period(const lb_board_config *cfg, const char *asked, int64_t now, char *id,
                             size_t size, const answer *a)
{
    gf_period_kind kind = (gf_period_kind)cfg->period;
    gf_period p;
    if (!asked[0] || strcmp(asked, "current") == 0 || strcmp(asked, "previous") == 0) {
        if (kind == GF_PERIOD_NONE && strcmp(asked, "previous") == 0)
            return fail(a, CODE_NOT_FOUND, "period", "board has one period (none): no previous");
        if (lb_period_back(kind, now, strcmp(asked, "previous") == 0, &p) != GF_OK)
            return fail(a, CODE_INVALID, "period", "the replica's clock is out of range");
        snprintf(id, size, "%s", p.id);
        return GF_OK;
    }
    if (!lb_period_id_ok(kind, asked))
        return fail(a, CODE_INVALID, "period",
                    kind == GF_PERIOD_DAILY    ? "must be current, previous or a day (2026-12-01)"
                    : kind == GF_PERIOD_WEEKLY ? "must be current, previous or an ISO week "
                                                 "(2026-W49)"
                                               : "must be current or all (the board has no "
                                                 "periods)");
    snprintf(id, size, "%s", asked);
    return GF_OK;
}

static bool id_ok(const char *id)
{
    return gf_token_len(id, GF_WIRE_ID_MAX) > 0;
}

/* Checks the query's fields; entries to room for. */
static gf_err check_query(const Gamefn__V1__LeaderboardQueryRequest *r, size_t *room,
                          const answer *a)
{
    switch (r->query_case) {
    case GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_TOP:
        if (r->top->limit < 1 || r->top->limit > GF_WIRE_LB_LIMIT_MAX)
            return fail(a, CODE_INVALID, "top.limit", "must be 1..100");
        *room = r->top->limit;
        return GF_OK;
    case GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_PAGE:
        if (r->page->start_rank < 1)
            return fail(a, CODE_INVALID, "page.start_rank", "must be >= 1");
        if (r->page->limit < 1 || r->page->limit > GF_WIRE_LB_LIMIT_MAX)
            return fail(a, CODE_INVALID, "page.limit", "must be 1..100");
        *room = r->page->limit;
        return GF_OK;
    case GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_AROUND:
        if (!id_ok(r->around->player_id))
            return fail(a, CODE_INVALID, "around.player_id", "must be 1..64 of [A-Za-z0-9_-]");
        if (r->around->before > GF_WIRE_LB_AROUND_MAX)
            return fail(a, CODE_INVALID, "around.before", "must be 0..50");
        if (r->around->after > GF_WIRE_LB_AROUND_MAX)
            return fail(a, CODE_INVALID, "around.after", "must be 0..50");
        *room = (size_t)r->around->before + 1 + r->around->after;
        return GF_OK;
    case GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_RANK:
        if (!id_ok(r->rank->player_id))
            return fail(a, CODE_INVALID, "rank.player_id", "must be 1..64 of [A-Za-z0-9_-]");
        *room = 1;
        return GF_OK;
    default:
        return fail(a, CODE_INVALID, "query", "exactly one of top, around, page, rank is required");
    }
}

/* The entries the query selects from board (NULL: no score in that period yet). */
static gf_err select_entries(const Gamefn__V1__LeaderboardQueryRequest *r, const gf_board *board,
                             gf_board_entry *e, size_t *n, const answer *a)
{
    *n = 0;
    switch (r->query_case) {
    case GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_TOP:
        *n = board ? gf_board_top(board, r->top->limit, e) : 0;
        return GF_OK;
    case GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_PAGE:
        *n = board ? gf_board_page(board, r->page->start_rank, r->page->limit, e) : 0;
        return GF_OK;
    case GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_AROUND:
        if (!board || gf_board_around(board, r->around->player_id, r->around->before,
                                      r->around->after, e, n) != GF_OK)
            return fail(a, CODE_NOT_FOUND, "around.player_id",
                        "the player has no score on this board in this period");
        return GF_OK;
    default: /* rank */
        if (!board || gf_board_get(board, r->rank->player_id, e) != GF_OK)
            return fail(a, CODE_NOT_FOUND, "rank.player_id",
                        "the player has no score on this board in this period");
        *n = 1;
        return GF_OK;
    }
}

static gf_err pack_reply(const char *board_name, const char *period, const gf_board *board,
                         const gf_board_entry *e, size_t n, const lb_freshness *fresh,
                         uint8_t **out, size_t *len)
{
    Gamefn__V1__LeaderboardQueryReply reply = GAMEFN__V1__LEADERBOARD_QUERY_REPLY__INIT;
    Gamefn__V1__LeaderboardEntry *entries = calloc(n ? n : 1, sizeof *entries);
    Gamefn__V1__LeaderboardEntry **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    char name[LB_NAME_MAX + 1], pid[LB_PERIOD_ID_MAX + 1];
    gf_err err = entries && ptrs ? GF_OK : GF_ERR_NOMEM;
    snprintf(name, sizeof name, "%s", board_name);
    snprintf(pid, sizeof pid, "%s", period);
    for (size_t i = 0; err == GF_OK && i < n; i++) {
        gamefn__v1__leaderboard_entry__init(&entries[i]);
        entries[i].rank = e[i].rank;
        entries[i].player_id = (char *)(uintptr_t)e[i].player_id;
        entries[i].score = e[i].score;
        entries[i].updated_unix_ms = e[i].updated_unix_ms;
        ptrs[i] = &entries[i];
    }
    reply.board = name;
    reply.period = pid;
    reply.n_entries = n;
    reply.entries = ptrs;
    reply.total_players = board ? gf_board_size(board) : 0;
    reply.as_of_stream_seq = fresh->as_of_stream_seq;
    reply.as_of_unix_ms = fresh->as_of_unix_ms;
    reply.pending = fresh->pending;
    if (err == GF_OK)
        err = gf_pack(&reply.base, out, len);
    free(entries);
    free(ptrs);
    return err;
}

gf_err lb_query(const lb_boards *b, const uint8_t *req, size_t len, const lb_freshness *fresh,
                int64_t now_unix_ms, uint8_t **out, size_t *out_len, int *code, char *field,
                size_t field_size, char *why, size_t why_size)
{
    answer a = {code, field, why, field_size, why_size};
    *out = NULL;
    *out_len = 0;
    *code = 0;
    field[0] = why[0] = '\0';
    if (len > GF_WIRE_REQUEST_MAX)
        return fail(&a, CODE_INVALID, "", "request larger than 16 KiB");
    Gamefn__V1__LeaderboardQueryRequest *r =
        gamefn__v1__leaderboard_query_request__unpack(NULL, len, req);
    if (!r)
        return fail(&a, CODE_INVALID, "", "not a LeaderboardQueryRequest");
    size_t room = 0;
    char period[LB_PERIOD_ID_MAX + 1];
    gf_board_entry *e = NULL;
    const lb_board_config *cfg = NULL;
    gf_err err = GF_OK;
    if (gf_token_len(r->board, LB_NAME_MAX) == 0)
        err = fail(&a, CODE_INVALID, "board", "must be 1..32 bytes of [A-Za-z0-9_-]");
    else if (!(cfg = lb_config_board(lb_boards_config(b), r->board)))
        err = fail(&a, CODE_NOT_FOUND, "board", "unknown board");
    if (err == GF_OK)
        err = check_query(r, &room, &a);
    if (err == GF_OK)
        err = resolve_period(cfg, r->period, now_unix_ms, period, sizeof period, &a);
    if (err == GF_OK && !lb_boards_period_kept(b, cfg, period))
        err = fail(&a, CODE_NOT_FOUND, "period", "period not kept by this service (periods_kept)");
    if (err == GF_OK && !(e = calloc(room, sizeof *e)))
        err = GF_ERR_NOMEM;
    size_t n = 0;
    const gf_board *board = err == GF_OK ? lb_boards_get(b, cfg->name, period) : NULL;
    if (err == GF_OK)
        err = select_entries(r, board, e, &n, &a);
    if (err == GF_OK)
        err = pack_reply(cfg->name, period, board, e, n, fresh, out, out_len);
    free(e);
    gamefn__v1__leaderboard_query_request__free_unpacked(r, NULL);
    return err;
}
