/*
 * check_events.c — no acknowledged event lost, no event with two effects.
 *
 * Design notes:
 * - Stored: a source's events in EVENTS form a set of source sequences (headers
 *   Gamefn-Source / Gamefn-Source-Seq, or the payload's source_id / source_seq). A spool
 *   replay after the duplicate window may store one event twice: that is allowed (the
 *   consumers deduplicate), so the set counts it once.
 * - Lost (log): every (source, seq) the producers' log lists as acknowledged that is not
 *   in the set. Undelivered: emitted, neither acknowledged, dropped nor stored.
 * - Effects: for each declared board, the expected score of every player is recomputed
 *   from the board's ScoreEvents in EVENTS, deduplicated by (source, seq) (the first
 *   stored copy counts), without those a leaderboard consumer dead-lettered: incr = sum of
 *   the deltas, best = the best value, set = the last value in stream order. A stored
 *   score that differs is classified: for incr, when every delta of the player is the same
 *   d and the difference is k*d, |k| events were applied twice (k > 0) or not at all
 *   (k < 0); otherwise one event whose delta equals the difference was applied twice, one
 *   whose delta equals minus the difference was not applied, and failing both the sign
 *   decides (above: twice, below: lost), counted as one event. A stored score with no
 *   event is an effect applied with no event (counted as double applied); a player with
 *   events and no stored score lost all of them. best and set are idempotent: a score
 *   better than every value (best) or one no event carries (set) counts as double
 *   applied, a worse or older one as lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_int.h"
#include "gamefn/v1/dlq.pb-c.h"
#include "gamefn/v1/event.pb-c.h"

#define PAYLOAD(x) GAMEFN__V1__GAME_EVENT__PAYLOAD_##x

/* ---- feeding -------------------------------------------------------------------------- */

/* Token `i` (0-based) of a dotted subject into buf; false if absent. */
static bool subject_token(const char *subject, int i, char *buf, size_t size)
{
    const char *p = subject;
    for (int k = 0; k < i && p; k++) {
        p = strchr(p, '.');
        p = p ? p + 1 : NULL;
    }
    if (!p)
        return false;
    size_t n = strcspn(p, ".");
    if (n == 0 || n >= size)
        return false;
    memcpy(buf, p, n);
    buf[n] = 0;
    return true;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || v == 0)
        return false;
    *out = v;
    return true;
}

gf_err gf_check_event(gf_check *c, const gf_check_event_msg *m)
{
    if (c->nomem || c->finished)
        return c->nomem ? GF_ERR_NOMEM : GF_ERR_INVALID;
    char type[64] = "";
    subject_token(m->subject ? m->subject : "", 5, type, sizeof type);
    uint64_t seq = 0;
    bool have = m->source_id && m->source_id[0] && parse_u64(m->source_seq, &seq);
    Gamefn__V1__GameEvent *ev = NULL;
    if (!have || strcmp(type, "score") == 0) {
        ev = gamefn__v1__game_event__unpack(NULL, m->len, m->payload);
        if (!ev || !ev->source_id || !ev->source_id[0] || ev->source_seq == 0) {
            /* The stream stores any bytes; the consumers dead-letter what does not decode
             * (by design, not a broken invariant): it cannot have an effect. */
            c->report.totals.events_malformed++;
            if (ev)
                gamefn__v1__game_event__free_unpacked(ev, NULL);
            return GF_OK;
        }
    }
    gf_err err = GF_OK;
    uint32_t src = ck_intern(&c->sources, have ? m->source_id : ev->source_id, NULL);
    if (!have)
        seq = ev->source_seq;
    if (src == CK_NONE ||
        !ck_grow((void **)&c->events, &c->capevents, c->nevents + 1, sizeof *c->events)) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    c->events[c->nevents++] = (ck_event){src, seq, m->stream_seq};
    if (ev && ev->payload_case == PAYLOAD(SCORE) && ev->player_id && ev->player_id[0]) {
        const char *board = ev->score->board && ev->score->board[0] ? ev->score->board : "global";
        uint32_t b = ck_intern(&c->boards, board, NULL);
        uint32_t p = ck_intern(&c->players, ev->player_id, NULL);
        if (b == CK_NONE || p == CK_NONE || !ck_ensure_board(c, b) ||
            !ck_grow((void **)&c->scores, &c->capscores, c->nscores + 1, sizeof *c->scores)) {
            err = GF_ERR_NOMEM;
            goto out;
        }
        c->scores[c->nscores++] = (ck_score){m->stream_seq, src, seq, b, p, ev->score->delta};
    }
out:
    if (ev)
        gamefn__v1__game_event__free_unpacked(ev, NULL);
    c->nomem |= err == GF_ERR_NOMEM;
    return err;
}

gf_err gf_check_dead_letter(gf_check *c, const uint8_t *value, size_t len)
{
    if (c->nomem || c->finished)
        return c->nomem ? GF_ERR_NOMEM : GF_ERR_INVALID;
    Gamefn__V1__DeadLetter *d = gamefn__v1__dead_letter__unpack(NULL, len, value);
    if (!d || !d->stream || !d->consumer) {
        ck_bad(c, &c->bad_letters, "DLQ: a message that is not a DeadLetter");
        if (d)
            gamefn__v1__dead_letter__free_unpacked(d, NULL);
        return GF_OK;
    }
    gf_err err = GF_OK;
    if (strcmp(d->stream, "EVENTS") == 0 && strncmp(d->consumer, "leaderboard", 11) == 0) {
        if (ck_grow((void **)&c->dead, &c->capdead, c->ndead + 1, sizeof *c->dead))
            c->dead[c->ndead++] = d->stream_seq;
        else
            err = GF_ERR_NOMEM;
    }
    gamefn__v1__dead_letter__free_unpacked(d, NULL);
    c->nomem |= err == GF_ERR_NOMEM;
    return err;
}

gf_err gf_check_board(gf_check *c, const char *board, gf_check_board_op op, bool ascending)
{
    if (c->nomem || c->finished)
        return c->nomem ? GF_ERR_NOMEM : GF_ERR_INVALID;
    if ((int)op < GF_CHECK_BOARD_INCR || op > GF_CHECK_BOARD_SET)
        return GF_ERR_INVALID;
    uint32_t b = ck_intern(&c->boards, board && board[0] ? board : "global", NULL);
    if (b == CK_NONE || !ck_ensure_board(c, b)) {
        c->nomem = true;
        return GF_ERR_NOMEM;
    }
    c->bd[b] = (ck_board){true, (uint8_t)op, ascending};
    return GF_OK;
}

gf_err gf_check_board_score(gf_check *c, const char *board, const char *player_id, int64_t score)
{
    if (c->nomem || c->finished)
        return c->nomem ? GF_ERR_NOMEM : GF_ERR_INVALID;
    uint32_t b = ck_intern(&c->boards, board && board[0] ? board : "global", NULL);
    uint32_t p = ck_intern(&c->players, player_id, NULL);
    if (b == CK_NONE || p == CK_NONE || !ck_ensure_board(c, b) ||
        !ck_grow((void **)&c->stored, &c->capstored, c->nstored + 1, sizeof *c->stored)) {
        c->nomem = true;
        return GF_ERR_NOMEM;
    }
    c->stored[c->nstored++] = (ck_stored){b, p, score};
    return GF_OK;
}

size_t gf_check_boards_count(const gf_check *c)
{
    return c->boards.n;
}

const char *gf_check_board_name(const gf_check *c, size_t i)
{
    return i < c->boards.n ? c->boards.str[i] : NULL;
}

/* ---- the stored set and the log ---------------------------------------------------------- */

static int event_cmp(const void *a, const void *b)
{
    const ck_event *x = a, *y = b;
    if (x->source != y->source)
        return x->source < y->source ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return (x->stream_seq > y->stream_seq) - (x->stream_seq < y->stream_seq);
}

static int range_cmp(const void *a, const void *b)
{
    const ck_range *x = a, *y = b;
    if (x->source != y->source)
        return x->source < y->source ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return (x->first > y->first) - (x->first < y->first);
}

/* The stored sequences of one source: sorted, each once. */
typedef struct seqset {
    const uint64_t *v;
    size_t n;
} seqset;

static size_t lower(const seqset *s, uint64_t x)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Sequences of [first, last] not in s; examples name the missing runs. */
static uint64_t missing(gf_check *c, int k, const char *source, uint64_t first, uint64_t last,
                        const seqset *s, const char *what)
{
    uint64_t expect = first, gone = 0;
    for (size_t i = lower(s, first); expect <= last; i++) {
        uint64_t next = i < s->n && s->v[i] <= last ? s->v[i] : last + 1;
        if (next > expect) {
            gone += next - expect;
            if (next - 1 > expect)
                ck_example(c, k, "source %s: seq %llu-%llu %s", source, (unsigned long long)expect,
                           (unsigned long long)(next - 1), what);
            else
                ck_example(c, k, "source %s: seq %llu %s", source, (unsigned long long)expect,
                           what);
        }
        if (next > last)
            break;
        expect = next + 1;
    }
    return gone;
}

/* Sorts and merges the log's ranges per (source, kind). */
static void normalise(gf_check *c)
{
    ck_sort(c->ranges, c->nranges, sizeof *c->ranges, range_cmp);
    size_t out = 0;
    for (size_t i = 0; i < c->nranges; i++) {
        ck_range *r = &c->ranges[i], *p = out ? &c->ranges[out - 1] : NULL;
        if (p && p->source == r->source && p->kind == r->kind && r->first <= p->last + 1) {
            if (r->last > p->last)
                p->last = r->last;
        } else {
            c->ranges[out++] = *r;
        }
    }
    c->nranges = out;
}

/* The sequences of [first, last] outside the ranges rs[0..n) (sorted) and not stored. */
static uint64_t undelivered(gf_check *c, const char *source, uint64_t first, uint64_t last,
                            const ck_range *rs, size_t n, const seqset *s, uint64_t *outside)
{
    static const char what[] = "emitted, neither acknowledged nor stored";
    uint64_t at = first, count = 0;
    for (size_t i = 0; i < n && at <= last; i++) {
        if (rs[i].last < at || rs[i].first > last)
            continue;
        if (rs[i].first > at) {
            *outside += rs[i].first - at;
            count += missing(c, CK_EVENTS_UNDELIVERED, source, at, rs[i].first - 1, s, what);
        }
        at = rs[i].last + 1;
    }
    if (at <= last && at >= first) {
        *outside += last - at + 1;
        count += missing(c, CK_EVENTS_UNDELIVERED, source, at, last, s, what);
    }
    return count;
}

/* One source's log against its stored set. rs: its ranges, sorted by kind. */
static void judge_source(gf_check *c, const char *source, const ck_range *rs, size_t n,
                         const seqset *s, uint64_t *lost, uint64_t *logged)
{
    const ck_range *acked = rs, *emitted = NULL, *dropped = NULL;
    size_t nacked = 0, nemitted = 0, ndropped = 0;
    for (size_t i = 0; i < n; i++) {
        nacked += rs[i].kind == CK_LOG_ACK;
        if (rs[i].kind == CK_LOG_EMIT && !nemitted++)
            emitted = &rs[i];
        if (rs[i].kind == CK_LOG_DROP && !ndropped++)
            dropped = &rs[i];
    }
    /* "Not delivered" pieces: emitted minus acked minus dropped (both sorted, merged). */
    ck_range *both = malloc((nacked + ndropped + 1) * sizeof *both);
    if (!both) {
        c->nomem = true;
        return;
    }
    if (nacked)
        memcpy(both, acked, nacked * sizeof *both);
    if (ndropped)
        memcpy(both + nacked, dropped, ndropped * sizeof *both);
    for (size_t i = 0; i < nacked + ndropped; i++)
        both[i].kind = 0;
    ck_sort(both, nacked + ndropped, sizeof *both, range_cmp);
    for (size_t i = 0; i < nacked; i++) {
        *logged += acked[i].last - acked[i].first + 1;
        *lost += missing(c, CK_EVENTS_LOST, source, acked[i].first, acked[i].last, s,
                         "acknowledged, not in EVENTS");
    }
    for (size_t i = 0; i < ndropped; i++) {
        uint64_t d = dropped[i].last - dropped[i].first + 1;
        c->counts[CK_EVENTS_DROPPED].count += d;
        ck_example(c, CK_EVENTS_DROPPED, "source %s: seq %llu-%llu dropped by the producer", source,
                   (unsigned long long)dropped[i].first, (unsigned long long)dropped[i].last);
    }
    for (size_t i = 0; i < nemitted; i++) {
        uint64_t outside = 0; /* emitted, neither acknowledged nor dropped */
        c->counts[CK_EVENTS_UNDELIVERED].count += undelivered(
            c, source, emitted[i].first, emitted[i].last, both, nacked + ndropped, s, &outside);
        *logged += outside;
    }
    free(both);
}

/* Returns the events lost according to the log; fills the undelivered and dropped counts. */
static uint64_t judge_log(gf_check *c, const uint64_t *uniq, const size_t *ufirst,
                          const size_t *ucount)
{
    uint64_t lost = 0, logged = 0;
    normalise(c);
    for (size_t i = 0; i < c->nranges;) {
        size_t j = i;
        while (j < c->nranges && c->ranges[j].source == c->ranges[i].source)
            j++;
        uint32_t src = c->ranges[i].source;
        seqset s = {uniq + ufirst[src], ucount[src]};
        judge_source(c, c->sources.str[src], &c->ranges[i], j - i, &s, &lost, &logged);
        i = j;
    }
    c->report.totals.events_logged = logged;
    return lost;
}

void ck_events_analyse(gf_check *c)
{
    gf_check_totals *tot = &c->report.totals;
    size_t ns = c->sources.n;
    uint64_t *uniq = malloc((c->nevents + 1) * sizeof *uniq);
    size_t *ufirst = calloc(ns + 1, sizeof *ufirst), *ucount = calloc(ns + 1, sizeof *ucount);
    if (!uniq || !ufirst || !ucount) {
        c->nomem = true;
        goto out;
    }
    ck_sort(c->events, c->nevents, sizeof *c->events, event_cmp);
    size_t nu = 0, twice = 0;
    for (size_t i = 0; i < c->nevents; i++) {
        const ck_event *e = &c->events[i];
        if (i && e->source == e[-1].source && e->seq == e[-1].seq) {
            twice++;
            continue;
        }
        if (ucount[e->source]++ == 0)
            ufirst[e->source] = nu;
        uniq[nu++] = e->seq;
    }
    tot->events = c->nevents;
    for (size_t s = 0; s < ns; s++)
        tot->event_sources += ucount[s] > 0;
    tot->score_events = c->nscores;
    tot->dead_letters = c->ndead;

    gf_check_count *lost = &c->counts[CK_EVENTS_LOST], *dbl = &c->counts[CK_EVENTS_DOUBLE];
    uint64_t from_log = c->have_log ? judge_log(c, uniq, ufirst, ucount) : 0;
    uint64_t from_boards = 0, applied_twice = 0;
    ck_effects_analyse(c, &from_boards, &applied_twice);
    lost->count = from_log + from_boards;
    dbl->count = applied_twice;
    lost->checked = c->have_log || tot->boards > 0;
    dbl->checked = tot->boards > 0;
    c->counts[CK_EVENTS_UNDELIVERED].checked = c->have_log;
    c->counts[CK_EVENTS_DROPPED].checked = c->have_log;
    if (!lost->checked)
        snprintf(lost->detail, sizeof lost->detail,
                 "no producers' log (--events-log) and no board's scores to compare");
    else
        snprintf(lost->detail, sizeof lost->detail,
                 "%llu acknowledged but not in EVENTS (%s), %llu missing from %llu boards' "
                 "scores; %zu events stored twice (allowed)",
                 (unsigned long long)from_log, c->have_log ? "per the log" : "no log",
                 (unsigned long long)from_boards, (unsigned long long)tot->boards, twice);
    if (!dbl->checked)
        snprintf(dbl->detail, sizeof dbl->detail, "no board's scores to compare");
    else
        snprintf(dbl->detail, sizeof dbl->detail, "over %llu scores on %llu boards",
                 (unsigned long long)tot->scores, (unsigned long long)tot->boards);
    const int logged[] = {CK_EVENTS_UNDELIVERED, CK_EVENTS_DROPPED};
    for (size_t i = 0; i < 2; i++) {
        if (!c->have_log)
            snprintf(c->counts[logged[i]].detail, sizeof c->counts[0].detail,
                     "no producers' log (--events-log)");
    }
out:
    free(uniq);
    free(ufirst);
    free(ucount);
}
