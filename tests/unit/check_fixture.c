/* check_fixture.c — see check_fixture.h. */
#include "check_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/v1/event.pb-c.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x

enum { MAXN = 8 };

static void build_config(ck_fx *f)
{
    f->dcs[0] = (gf_match_dc){"eu-west", "eu"};
    f->dcs[1] = (gf_match_dc){"us-east", "na"};
    gf_match_queue_defaults(&f->queues[0], "duel", GF_MATCH_HYBRID, "1v1");
    gf_match_queue_defaults(&f->queues[1], "sduel", GF_MATCH_SBMM, "1v1");
    gf_match_queue_defaults(&f->queues[2], "pduel", GF_MATCH_PING_FIRST, "1v1");
    gf_match_queue_defaults(&f->queues[3], "pair", GF_MATCH_HYBRID, "2v2");
    for (size_t i = 0; i < 4; i++)
        f->queues[i].ttl_ms = 60000;
    f->cfg = (gf_match_config){
        .datacenters = f->dcs, .datacenters_len = 2, .queues = f->queues, .queues_len = 4};
    char why[256];
    if (gf_match_config_prepare(&f->cfg, why, sizeof why) != GF_OK)
        fail_msg("fixture config: %s", why);
}

void ck_fx_start_with(ck_fx *f, gf_check_params *p)
{
    build_config(f);
    p->queues = &f->cfg;
    assert_int_equal(gf_check_new(p, &f->c), GF_OK);
}

void ck_fx_start(ck_fx *f, int64_t now)
{
    memset(f, 0, sizeof *f);
    gf_check_params p;
    gf_check_params_default(&p);
    p.now_ms = T0 + now;
    ck_fx_start_with(f, &p);
}

/* Splits "a,b" into at most MAXN pieces in buf. */
static size_t split(const char *list, char buf[MAXN][72])
{
    size_t n = 0;
    for (const char *p = list; p && *p && n < MAXN;) {
        size_t len = strcspn(p, ",");
        snprintf(buf[n++], 72, "%.*s", (int)len, p);
        p += len + (p[len] == ',');
    }
    return n;
}

static void feed(ck_fx *f, gf_err (*fn)(gf_check *, const gf_check_record *), uint64_t *seq,
                 const char *key, gf_check_op op, const ProtobufCMessage *m, int64_t at)
{
    uint8_t buf[8192];
    size_t len = m ? protobuf_c_message_pack(m, buf) : 0;
    assert_true(len < sizeof buf);
    gf_check_record r = {++*seq, (T0 + at) * 1000000, key, op, m ? buf : NULL, len};
    assert_int_equal(fn(f->c, &r), GF_OK);
}

/* A ticket record in `state`; claim or assignment by `match` (datacenter dc). */
static void ticket(ck_fx *f, const fx_ticket *t, int state, const char *match, const char *dc,
                   int64_t at)
{
    char ids[MAXN][72], pings[MAXN][72], dcname[MAXN][40];
    Gamefn__V1__PartyMember m[MAXN], *mp[MAXN];
    Gamefn__V1__DatacenterPing p[MAXN], *pp[MAXN];
    size_t nm = split(t->players, ids), np = split(t->pings, pings);
    for (size_t i = 0; i < nm; i++) {
        m[i] = (Gamefn__V1__PartyMember)GAMEFN__V1__PARTY_MEMBER__INIT;
        m[i].player_id = ids[i];
        m[i].rating = t->ratings[i];
        mp[i] = &m[i];
    }
    for (size_t i = 0; i < np; i++) {
        p[i] = (Gamefn__V1__DatacenterPing)GAMEFN__V1__DATACENTER_PING__INIT;
        unsigned ms = 0;
        assert_int_equal(sscanf(pings[i], "%39[^:]:%u", dcname[i], &ms), 2);
        p[i].datacenter = dcname[i];
        p[i].ping_ms = ms;
        pp[i] = &p[i];
    }
    Gamefn__V1__TicketRecord r = GAMEFN__V1__TICKET_RECORD__INIT;
    Gamefn__V1__Claim claim = GAMEFN__V1__CLAIM__INIT;
    Gamefn__V1__Assignment a = GAMEFN__V1__ASSIGNMENT__INIT;
    r.ticket_id = (char *)(uintptr_t)t->id;
    r.idempotency_key = (char *)(uintptr_t)t->id;
    r.queue = (char *)(uintptr_t)t->queue;
    r.n_members = nm;
    r.members = mp;
    r.n_pings = np;
    r.pings = pp;
    r.region = "eu";
    r.state = state;
    r.created_unix_ms = T0 + t->created;
    r.queued_unix_ms = T0 + t->created;
    r.updated_unix_ms = T0 + at;
    r.expires_unix_ms = T0 + t->created + 60000;
    if (state == ST(CLAIMED)) {
        claim.matcher_id = "matcher-1";
        claim.match_id = (char *)(uintptr_t)match;
        claim.claimed_unix_ms = T0 + at;
        claim.lease_expires_unix_ms = T0 + at + 10000;
        r.claim = &claim;
    } else if (state == ST(ASSIGNED)) {
        a.match_id = (char *)(uintptr_t)match;
        a.ticket_id = (char *)(uintptr_t)t->id;
        a.server_id = "gs-1";
        a.datacenter = (char *)(uintptr_t)dc;
        a.address = "10.0.0.1";
        a.port = 7777;
        a.assigned_unix_ms = T0 + at;
        r.assignment = &a;
    }
    feed(f, gf_check_ticket, &f->seq_tickets, t->id, GF_CHECK_PUT, &r.base, at);
}

void fx_queued(ck_fx *f, const fx_ticket *t, int64_t at)
{
    ticket(f, t, ST(QUEUED), NULL, NULL, at);
}

void fx_claimed(ck_fx *f, const fx_ticket *t, const char *match, int64_t at)
{
    ticket(f, t, ST(CLAIMED), match, NULL, at);
}

void fx_assigned(ck_fx *f, const fx_ticket *t, const char *match, const char *dc, int64_t at)
{
    ticket(f, t, ST(ASSIGNED), match, dc, at);
}

void fx_cancelled(ck_fx *f, const fx_ticket *t, int64_t at)
{
    ticket(f, t, ST(CANCELLED), NULL, NULL, at);
}

void fx_timed_out(ck_fx *f, const fx_ticket *t, int64_t at)
{
    ticket(f, t, ST(TIMED_OUT), NULL, NULL, at);
}

void fx_ticket_deleted(ck_fx *f, const char *id, int64_t at)
{
    feed(f, gf_check_ticket, &f->seq_tickets, id, GF_CHECK_DEL, NULL, at);
}

void fx_ticket_garbage(ck_fx *f, const char *id, int64_t at)
{
    static const uint8_t junk[] = {0xff, 0xff, 0xff, 0x01, 0x02};
    gf_check_record r = {++f->seq_tickets, (T0 + at) * 1000000, id, GF_CHECK_PUT, junk,
                         sizeof junk};
    assert_int_equal(gf_check_ticket(f->c, &r), GF_OK);
}

void fx_committed(ck_fx *f, const char *match, const char *tickets, const char *dc, int64_t at)
{
    char ids[MAXN][72];
    size_t n = split(tickets, ids);
    Gamefn__V1__Assignment a[MAXN], *ap[MAXN];
    for (size_t i = 0; i < n; i++) {
        a[i] = (Gamefn__V1__Assignment)GAMEFN__V1__ASSIGNMENT__INIT;
        a[i].match_id = (char *)(uintptr_t)match;
        a[i].ticket_id = ids[i];
        a[i].server_id = "gs-1";
        a[i].datacenter = (char *)(uintptr_t)dc;
        a[i].address = "10.0.0.1";
        a[i].port = 7777;
        ap[i] = &a[i];
    }
    Gamefn__V1__MatchOutcome o = GAMEFN__V1__MATCH_OUTCOME__INIT;
    o.match_id = (char *)(uintptr_t)match;
    o.state = GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED;
    o.n_assignments = n;
    o.assignments = ap;
    o.decided_by = "allocator-1";
    o.decided_unix_ms = T0 + at;
    feed(f, gf_check_outcome, &f->seq_matches, match, GF_CHECK_PUT, &o.base, at);
}

void fx_aborted(ck_fx *f, const char *match, int64_t at)
{
    Gamefn__V1__MatchOutcome o = GAMEFN__V1__MATCH_OUTCOME__INIT;
    o.match_id = (char *)(uintptr_t)match;
    o.state = GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_ABORTED;
    o.abort_reason = GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_CLAIM_EXPIRED;
    o.decided_by = "matcher-1";
    o.decided_unix_ms = T0 + at;
    feed(f, gf_check_outcome, &f->seq_matches, match, GF_CHECK_PUT, &o.base, at);
}

void fx_player(ck_fx *f, const char *player, const char *ticket_id, int64_t at)
{
    Gamefn__V1__PlayerMatchRecord p = GAMEFN__V1__PLAYER_MATCH_RECORD__INIT;
    p.player_id = (char *)(uintptr_t)player;
    p.ticket_id = (char *)(uintptr_t)ticket_id;
    p.created_unix_ms = T0 + at;
    feed(f, gf_check_player, &f->seq_players, player, GF_CHECK_PUT, &p.base, at);
}

void fx_player_deleted(ck_fx *f, const char *player, int64_t at)
{
    feed(f, gf_check_player, &f->seq_players, player, GF_CHECK_DEL, NULL, at);
}

static void players_of(ck_fx *f, const fx_ticket *t, int64_t at)
{
    char ids[MAXN][72];
    size_t n = split(t->players, ids);
    for (size_t i = 0; i < n; i++)
        fx_player(f, ids[i], t->id, at);
}

void fx_pair(ck_fx *f, const fx_ticket *a, const fx_ticket *b, const char *match, int64_t q,
             int64_t claim, const char *dc)
{
    char both[160];
    snprintf(both, sizeof both, "%s,%s", a->id, b->id);
    fx_queued(f, a, q);
    fx_queued(f, b, q);
    fx_claimed(f, a, match, claim);
    fx_claimed(f, b, match, claim);
    if (!dc)
        return;
    fx_committed(f, match, both, dc, claim + 50);
    fx_assigned(f, a, match, dc, claim + 50);
    fx_assigned(f, b, match, dc, claim + 50);
}

void fx_match(ck_fx *f, const fx_ticket *a, const fx_ticket *b, const char *match, int64_t q)
{
    players_of(f, a, q);
    players_of(f, b, q);
    fx_pair(f, a, b, match, q, q + 100, "eu-west");
}

size_t fx_event_pack(const char *source, uint64_t seq, const char *player, const char *board,
                     int64_t delta, uint8_t *buf, char *subject, size_t subject_size)
{
    Gamefn__V1__GameEvent e = GAMEFN__V1__GAME_EVENT__INIT;
    Gamefn__V1__ScoreEvent s = GAMEFN__V1__SCORE_EVENT__INIT;
    Gamefn__V1__ZoneChangeEvent z = GAMEFN__V1__ZONE_CHANGE_EVENT__INIT;
    char id[96];
    snprintf(id, sizeof id, "%s-%llu", source, (unsigned long long)seq);
    e.event_id = id;
    e.source_id = (char *)(uintptr_t)source;
    e.source_seq = seq;
    e.player_id = (char *)(uintptr_t)player;
    e.occurred_unix_ms = T0;
    if (board) {
        e.event_type = "score";
        s.delta = delta;
        s.board = (char *)(uintptr_t)board;
        e.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE;
        e.score = &s;
    } else {
        e.event_type = "zone_change";
        z.to_zone = "b";
        e.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_ZONE_CHANGE;
        e.zone_change = &z;
    }
    snprintf(subject, subject_size, "gamefn.v1.evp.3.%s.%s", player, e.event_type);
    assert_true(gamefn__v1__game_event__get_packed_size(&e) <= 512);
    return gamefn__v1__game_event__pack(&e, buf);
}

void ck_fx_finish(ck_fx *f)
{
    assert_int_equal(gf_check_finish(f->c, &f->r), GF_OK);
}

uint64_t fx_count(ck_fx *f, const char *name)
{
    if (!f->r)
        ck_fx_finish(f);
    const gf_check_count *n = gf_check_report_find(f->r, name);
    if (!n)
        fail_msg("no count named %s", name);
    return n->count;
}

void fx_print(const ck_fx *f)
{
    for (size_t i = 0; f->r && i < f->r->counts_len; i++) {
        const gf_check_count *n = &f->r->counts[i];
        fprintf(stderr, "  %-28s %s %llu  %s\n", n->name, n->checked ? "" : "(not checked)",
                (unsigned long long)n->count, n->detail);
        for (size_t e = 0; e < n->examples_len; e++)
            fprintf(stderr, "      %s\n", n->examples[e]);
    }
}

static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

void fx_only(ck_fx *f, const char *name, uint64_t want, const char *also)
{
    if (!f->r)
        ck_fx_finish(f);
    bool ok = true;
    for (size_t i = 0; i < f->r->counts_len; i++) {
        const gf_check_count *n = &f->r->counts[i];
        if (name && strcmp(n->name, name) == 0)
            ok &= n->count == want;
        else if (!listed(also, n->name))
            ok &= !n->checked || n->count == 0;
    }
    if (!ok) {
        fx_print(f);
        fail_msg("expected %s = %llu (also allowed: %s)", name ? name : "-",
                 (unsigned long long)want, also ? also : "none");
    }
}

void fx_all_zero(ck_fx *f)
{
    fx_only(f, NULL, 0, NULL);
}

void ck_fx_end(ck_fx *f)
{
    gf_check_free(f->c);
    f->c = NULL;
}
