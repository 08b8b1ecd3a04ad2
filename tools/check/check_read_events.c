/*
 * check_read_events.c — the events of a live deployment (check_read_int.h): EVENTS, the
 * dead letters of EVENTS in the DLQ, and every stored score of the boards the score
 * events name.
 *
 * Design notes:
 * - Without EVENTS nothing more is read (a note says so); a missing DLQ holds no dead
 *   letters. Of the DLQ only the dead letters of EVENTS are fed.
 * - Scores come from the leaderboard's query endpoint, the players' view of the
 *   effects, after its consumers drained.
 */
#include <stdio.h>
#include <string.h>

#include "check_read_int.h"
#include "gamefn/clock.h"
#include "gamefn/subjects.h"
#include "gamefn/v1/leaderboard.pb-c.h"
#include "gamefn/wire_error.h"

enum { PAGE = 100 };

static gf_err on_event(ck_reader *r, natsMsg *m, const jsMsgMetaData *meta, const char *prefix)
{
    const char *source = NULL, *seq = NULL;
    natsMsgHeader_Get(m, "Gamefn-Source", &source);
    natsMsgHeader_Get(m, "Gamefn-Source-Seq", &seq);
    gf_check_event_msg e = {meta->Sequence.Stream,
                            meta->Timestamp,
                            natsMsg_GetSubject(m),
                            source,
                            seq,
                            (const uint8_t *)natsMsg_GetData(m),
                            (size_t)natsMsg_GetDataLength(m)};
    return gf_check_event(r->c, &e);
}

static gf_err on_dead_letter(ck_reader *r, natsMsg *m, const jsMsgMetaData *meta,
                             const char *prefix)
{
    if (strncmp(natsMsg_GetSubject(m), prefix, strlen(prefix)) != 0)
        return GF_OK;
    return gf_check_dead_letter(r->c, (const uint8_t *)natsMsg_GetData(m),
                                (size_t)natsMsg_GetDataLength(m));
}

static gf_err read_plain(ck_reader *r, const char *stream, ck_read_msg_fn fn, const char *prefix,
                         bool *missing)
{
    jsStreamInfo *si = NULL;
    gf_err err = ck_read_info(r, stream, &si);
    *missing = err == GF_ERR_NOT_FOUND;
    if (err == GF_OK)
        err = ck_read_ordered(r, stream, si, 0, si->State.LastSeq, fn, prefix, NULL, NULL);
    jsStreamInfo_Destroy(si);
    return *missing ? GF_OK : err;
}

/* Waits until every leaderboard consumer of EVENTS has nothing pending or in flight. */
static void settle(ck_reader *r)
{
    int64_t wait = r->o->settle_ms > 0 ? r->o->settle_ms : 10000;
    int64_t deadline = gf_clock_mono_ms() + wait;
    for (;;) {
        jsConsumerInfoList *list = NULL;
        uint64_t behind = 0;
        if (js_Consumers(&list, r->js, "EVENTS", NULL, NULL) != NATS_OK)
            return;
        for (int i = 0; i < list->Count; i++) {
            const jsConsumerInfo *ci = list->List[i];
            if (strncmp(ci->Name, "leaderboard", 11) == 0)
                behind += ci->NumPending + (uint64_t)ci->NumAckPending;
        }
        jsConsumerInfoList_Destroy(list);
        if (behind == 0)
            return;
        if (gf_clock_mono_ms() >= deadline) {
            ck_read_note(r,
                         "the leaderboard consumers still had %llu events to apply after %lld ms",
                         (unsigned long long)behind, (long long)wait);
            return;
        }
        gf_clock_sleep_ms(200);
    }
}

static const gf_check_board_spec *spec_of(const gf_check_read_opts *o, const char *board)
{
    for (size_t i = 0; i < o->boards_len; i++) {
        if (strcmp(o->boards[i].name, board) == 0)
            return &o->boards[i];
    }
    return NULL;
}

/* One page of `board` from rank `start`. GF_ERR_NOT_FOUND: the board is unknown. */
static gf_err page(ck_reader *r, const char *board, uint64_t start,
                   Gamefn__V1__LeaderboardQueryReply **out, natsStatus *status)
{
    Gamefn__V1__LeaderboardQueryRequest q = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__INIT;
    Gamefn__V1__PageQuery p = GAMEFN__V1__PAGE_QUERY__INIT;
    q.board = (char *)(uintptr_t)board;
    q.query_case = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_PAGE;
    q.page = &p;
    p.start_rank = start;
    p.limit = PAGE;
    uint8_t buf[256];
    size_t len = gamefn__v1__leaderboard_query_request__pack(&q, buf);
    natsMsg *reply = NULL;
    int64_t timeout = r->o->request_timeout_ms > 0 ? r->o->request_timeout_ms : 2000;
    *out = NULL;
    *status = natsConnection_Request(&reply, r->nc, GF_WIRE_SUBJ_LEADERBOARD_QUERY, buf, (int)len,
                                     timeout);
    if (*status != NATS_OK)
        return GF_ERR_UNAVAILABLE;
    const char *code = NULL, *text = NULL;
    natsMsgHeader_Get(reply, GF_WIRE_HDR_ERROR_CODE, &code);
    natsMsgHeader_Get(reply, GF_WIRE_HDR_ERROR, &text);
    gf_wire_error e;
    const uint8_t *data = (const uint8_t *)natsMsg_GetData(reply);
    size_t n = (size_t)natsMsg_GetDataLength(reply);
    gf_err err = gf_wire_reply_check(code, text, data, n, &e);
    if (err == GF_OK) {
        *out = gamefn__v1__leaderboard_query_reply__unpack(NULL, n, data);
        err = *out ? GF_OK : GF_ERR_INVALID;
    }
    natsMsg_Destroy(reply);
    return err;
}

/* Every stored score of every board the score events name. */
static gf_err read_scores(ck_reader *r)
{
    size_t n = gf_check_boards_count(r->c);
    if (n == 0)
        return GF_OK;
    settle(r);
    for (size_t b = 0; b < n; b++) {
        char board[72];
        snprintf(board, sizeof board, "%s", gf_check_board_name(r->c, b));
        uint64_t start = 1, total = 0, got = 0;
        bool declared = false;
        for (;;) {
            Gamefn__V1__LeaderboardQueryReply *reply = NULL;
            natsStatus s = NATS_OK;
            gf_err err = page(r, board, start, &reply, &s);
            if (err == GF_ERR_UNAVAILABLE) {
                ck_read_note(r, "no leaderboard answered %s (%s): scores not compared",
                             GF_WIRE_SUBJ_LEADERBOARD_QUERY, natsStatus_GetText(s));
                return GF_OK;
            }
            if (err != GF_OK) {
                ck_read_note(r, "board %s: the leaderboard answered %s: not compared", board,
                             gf_err_str(err));
                break;
            }
            if (!declared) {
                const gf_check_board_spec *sp = spec_of(r->o, board);
                err = gf_check_board(r->c, board, sp ? sp->op : GF_CHECK_BOARD_INCR,
                                     sp && sp->ascending);
                declared = true;
            }
            total = reply->total_players;
            for (size_t i = 0; i < reply->n_entries && err == GF_OK; i++)
                err = gf_check_board_score(r->c, board, reply->entries[i]->player_id,
                                           reply->entries[i]->score);
            size_t entries = reply->n_entries;
            gamefn__v1__leaderboard_query_reply__free_unpacked(reply, NULL);
            if (err != GF_OK)
                return err;
            got += entries;
            start += PAGE;
            if (entries < PAGE || got >= total)
                break;
        }
    }
    return GF_OK;
}

gf_err ck_read_events(ck_reader *r)
{
    bool missing = false;
    gf_err err = read_plain(r, "EVENTS", on_event, "", &missing);
    if (err != GF_OK)
        return err;
    if (missing) {
        gf_check_missing(r->c, GF_CHECK_SRC_EVENTS, "stream EVENTS does not exist");
        ck_read_note(r, "stream EVENTS does not exist");
        return GF_OK;
    }
    err = read_plain(r, "DLQ", on_dead_letter, GF_WIRE_SUBJ_DLQ ".EVENTS.", &missing);
    if (err == GF_OK && !r->o->no_scores)
        err = read_scores(r);
    return err;
}
