/* mm_audit.c — the tests' invariant checker over the AUDIT_* mirrors (mm_support.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/tickets/config.h"
#include "gamefn/tickets/outcome.h"
#include "gamefn/tickets/record.h"
#include "mm_support.h"
#include "mmcheck.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define RS(x) GAMEFN__V1__TICKET_REASON__TICKET_REASON_##x

typedef struct seen {
    char id[72];
    int state;
    char match[72];    /* claim or assignment */
    char assigned[72]; /* first match that assigned it */
} seen;

typedef struct book {
    seen *t;
    size_t n, cap;
} book;

static seen *lookup(book *b, const char *id)
{
    for (size_t i = 0; i < b->n; i++) {
        if (strcmp(b->t[i].id, id) == 0)
            return &b->t[i];
    }
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 256;
        b->t = realloc(b->t, b->cap * sizeof *b->t);
        assert_non_null(b->t);
    }
    seen *s = &b->t[b->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", id);
    return s;
}

/* Message `seq` of `stream`: retried, and a test failure if it cannot be read (a skipped
 * revision would make an earlier state look like the last one). */
static natsMsg *get_msg(gf_fnenv *env, const char *stream, uint64_t seq)
{
    natsMsg *m = NULL;
    natsStatus s = NATS_OK;
    for (int attempt = 0; attempt < 5; attempt++) {
        if ((s = js_GetMsg(&m, env->js, stream, seq, NULL, NULL)) == NATS_OK)
            return m;
        gf_clock_sleep_ms(100);
    }
    fail_msg("%s: message %llu unreadable: %s", stream, (unsigned long long)seq,
             natsStatus_GetText(s));
    return NULL;
}

/* Waits until the mirror holds everything the bucket does. */
static uint64_t caught_up(gf_fnenv *env, const char *audit, const char *bucket, uint64_t *first)
{
    char kv[64];
    snprintf(kv, sizeof kv, "KV_%s", bucket);
    for (int i = 0; i < 200; i++) {
        jsStreamInfo *a = NULL, *b = NULL;
        assert_int_equal(js_GetStreamInfo(&a, env->js, audit, NULL, NULL), NATS_OK);
        assert_int_equal(js_GetStreamInfo(&b, env->js, kv, NULL, NULL), NATS_OK);
        uint64_t la = a->State.LastSeq, lb = b->State.LastSeq;
        *first = a->State.FirstSeq;
        jsStreamInfo_Destroy(a);
        jsStreamInfo_Destroy(b);
        if (la >= lb)
            return la;
        gf_clock_sleep_ms(50);
    }
    fail_msg("%s did not catch up with %s", audit, kv);
    return 0;
}

static void read_tickets(gf_fnenv *env, book *b, mm_audit *out)
{
    uint64_t first = 0, last = caught_up(env, "AUDIT_TICKETS", "tickets", &first);
    for (uint64_t seq = first; seq <= last && last > 0; seq++) {
        natsMsg *m = get_msg(env, "AUDIT_TICKETS", seq);
        Gamefn__V1__TicketRecord *r = NULL;
        const char *subj = natsMsg_GetSubject(m);
        const char *key = strrchr(subj, '.') + 1;
        if (natsMsg_GetDataLength(m) > 0 &&
            gf_ticket_decode((const uint8_t *)natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m),
                             key, &r, NULL) == GF_OK) {
            seen *s = lookup(b, key);
            out->revisions++;
            if (r->state == ST(CLAIMED)) {
                if (s->state == ST(CLAIMED) && strcmp(s->match, r->claim->match_id) != 0)
                    out->double_claims++;
                snprintf(s->match, sizeof s->match, "%s", r->claim->match_id);
            } else if (r->state == ST(QUEUED) && s->state == ST(CLAIMED)) {
                out->returns_dropped += r->reason == RS(MATCH_DROPPED);
                out->returns_expired += r->reason == RS(CLAIM_EXPIRED);
            } else if (r->state == ST(ASSIGNED)) {
                if (s->assigned[0] && strcmp(s->assigned, r->assignment->match_id) != 0)
                    out->assigned_twice++;
                snprintf(s->assigned, sizeof s->assigned, "%s", r->assignment->match_id);
                snprintf(s->match, sizeof s->match, "%s", r->assignment->match_id);
            }
            s->state = r->state;
        }
        gf_ticket_free(r);
        natsMsg_Destroy(m);
    }
    out->tickets = b->n;
    for (size_t i = 0; i < b->n; i++)
        out->assigned += b->t[i].state == ST(ASSIGNED);
}

/* Every revision of ticket `id` to stderr (when something about it is wrong). */
static void dump_history(gf_fnenv *env, const char *id)
{
    uint64_t first = 0, last = caught_up(env, "AUDIT_TICKETS", "tickets", &first);
    for (uint64_t seq = first; seq <= last && last > 0; seq++) {
        natsMsg *m = get_msg(env, "AUDIT_TICKETS", seq);
        const char *subj = natsMsg_GetSubject(m);
        Gamefn__V1__TicketRecord *r = NULL;
        if (strcmp(strrchr(subj, '.') + 1, id) == 0 &&
            gf_ticket_decode((const uint8_t *)natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m),
                             id, &r, NULL) == GF_OK)
            fprintf(stderr, "audit:   rev %llu %s %s match '%s' updated %lld\n",
                    (unsigned long long)seq, gf_ticket_state_name(r->state),
                    gf_ticket_reason_name(r->reason),
                    r->claim        ? r->claim->match_id
                    : r->assignment ? r->assignment->match_id
                                    : "",
                    (long long)r->updated_unix_ms);
        gf_ticket_free(r);
        natsMsg_Destroy(m);
    }
}

static void read_matches(gf_fnenv *env, book *b, mm_audit *out)
{
    uint64_t first = 0, last = caught_up(env, "AUDIT_MATCHES", "matches", &first);
    for (uint64_t seq = first; seq <= last && last > 0; seq++) {
        natsMsg *m = get_msg(env, "AUDIT_MATCHES", seq);
        Gamefn__V1__MatchOutcome *o = NULL;
        if (gf_outcome_decode((const uint8_t *)natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m),
                              NULL, &o, NULL) == GF_OK) {
            if (o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED) {
                out->committed++;
                for (size_t i = 0; i < o->n_assignments; i++) {
                    seen *s = lookup(b, o->assignments[i]->ticket_id);
                    if (s->state != ST(ASSIGNED) || strcmp(s->assigned, o->match_id) != 0) {
                        out->half_assigned++;
                        fprintf(stderr,
                                "audit: match %s committed, but ticket %s ended %s (assigned by "
                                "'%s', last claim '%s')\n",
                                o->match_id, s->id, gf_ticket_state_name(s->state), s->assigned,
                                s->match);
                        fprintf(stderr, "audit:   committed by %s at %lld\n", o->decided_by,
                                (long long)o->decided_unix_ms);
                        dump_history(env, s->id);
                    }
                }
            } else if (o->abort_reason ==
                       GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_CLAIM_EXPIRED) {
                out->aborted_expired++;
            } else if (o->abort_reason ==
                       GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_TICKET_CANCELLED) {
                out->aborted_cancelled++;
            } else {
                out->aborted_other++;
            }
        }
        gf_outcome_free(o);
        natsMsg_Destroy(m);
    }
}

void mm_audit_run(gf_fnenv *env, mm_audit *out)
{
    book b = {0};
    memset(out, 0, sizeof *out);
    read_tickets(env, &b, out);
    read_matches(env, &b, out);
    kvStore *players = NULL;
    kvKeysList keys = {0};
    assert_int_equal(js_KeyValue(&players, env->js, "players"), NATS_OK);
    if (kvStore_Keys(&keys, players, NULL) == NATS_OK)
        out->live_players = (size_t)keys.Count;
    kvKeysList_Destroy(&keys);
    kvStore_Destroy(players);
    free(b.t);
}

void mm_audit_print(const mm_audit *a)
{
    fprintf(stderr,
            "audit: tickets=%zu revisions=%zu double_claims=%zu returns_dropped=%zu "
            "returns_expired=%zu assigned=%zu assigned_twice=%zu committed=%zu "
            "aborted_expired=%zu aborted_cancelled=%zu aborted_other=%zu half_assigned=%zu "
            "live_players=%zu\n",
            a->tickets, a->revisions, a->double_claims, a->returns_dropped, a->returns_expired,
            a->assigned, a->assigned_twice, a->committed, a->aborted_expired, a->aborted_cancelled,
            a->aborted_other, a->half_assigned, a->live_players);
}

void mm_check_clean(gf_fnenv *env, int64_t grace_ms)
{
    mm_check_clean_but(env, grace_ms, 0);
}

gf_err mm_check_run(gf_fnenv *env, int64_t grace_ms, gf_mmcheck **out)
{
    gf_config *cfg = NULL;
    gf_config_error cerr;
    gf_mm_tables tables;
    char why[256];
    assert_int_equal(gf_mm_config_load(env->config_path, &cfg, &cerr), GF_OK);
    const gf_mm_config *mm = gf_config_function(cfg);
    assert_int_equal(gf_mm_tables_build(&mm->matchmaking, &tables, why, sizeof why), GF_OK);
    gf_mmcheck_opts o = {.queues = &tables.cfg, .grace_ms = grace_ms};
    gf_err err = gf_mmcheck_run(env->nc, env->js, &o, out);
    gf_config_free(cfg);
    return err;
}

void mm_check_clean_but(gf_fnenv *env, int64_t grace_ms, uint64_t bad_records)
{
    gf_mmcheck *m = NULL;
    assert_int_equal(mm_check_run(env, grace_ms, &m), GF_OK);
    gf_mmcheck_print(m);
    static const char *const zero[] = {
        "double_claims",         "players_in_two_matches",
        "tickets_lost",          "limit_violations",
        "half_assigned_matches", "assigned_without_commit",
        "terminal_changed",      "match_outcome_rewritten",
        "bad_records",           "players_in_two_live_tickets",
    };
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++) {
        const gf_check_count *c = gf_check_report_find(m->report, zero[i]);
        assert_non_null(c);
        uint64_t want = strcmp(zero[i], "bad_records") == 0 ? bad_records : 0;
        if (c->checked && c->count != want)
            fail_msg("checker: %s = %llu, not %llu", zero[i], (unsigned long long)c->count,
                     (unsigned long long)want);
    }
    assert_true(gf_check_report_find(m->report, "limit_violations")->checked);
    gf_mmcheck_free(m);
}
