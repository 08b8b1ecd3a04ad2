/*
 * mirror_support.c — the matchmaking buckets and their audit mirrors for
 * test_check_mirror.c and test_check_mirror_cluster.c (mirror_support.h).
 *
 * Design notes:
 * - Writes are retried for up to RETRY_MS: on a cluster a stream may have no leader for
 *   seconds after a node or the whole cluster restarted (no responders, timeouts). A
 *   compare-and-set that timed out may have been stored all the same; its retry is then
 *   refused, and a key now past `last` is taken as that write (the tests are the keys'
 *   only writers). A plain put that timed out and is sent again may store twice: the
 *   tests write without compare-and-set only while everything is up.
 */
#include "mirror_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"

enum { RETRY_MS = 30000, RECORD_MAX = 256 };

static kvStore *create_bucket(jsCtx *js, const char *name, int64_t history, int replicas)
{
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = name;
    kc.History = history;
    kc.Replicas = replicas;
    kvStore *kv = NULL;
    natsStatus s = NATS_ERR;
    /* Right after a cluster forms the meta leader may not place R3 yet: retry briefly. */
    for (int64_t until = gf_clock_mono_ms() + 10000; gf_clock_mono_ms() < until;) {
        if ((s = js_CreateKeyValue(&kv, js, &kc)) == NATS_OK)
            break;
        gf_clock_sleep_ms(100);
    }
    if (s != NATS_OK)
        fail_msg("create bucket %s: %s", name, nats_GetLastError(NULL));
    return kv;
}

void mirror_deploy_buckets(jsCtx *js, int replicas, int64_t tickets_history,
                           int64_t players_history, kvStore **tickets, kvStore **players)
{
    kvStore *t = create_bucket(js, "tickets", tickets_history > 0 ? tickets_history : 5, replicas);
    kvStore *m = create_bucket(js, "matches", 5, replicas);
    kvStore *p = create_bucket(js, "players", players_history > 0 ? players_history : 5, replicas);
    kvStore_Destroy(m);
    if (tickets)
        *tickets = t;
    else
        kvStore_Destroy(t);
    if (players)
        *players = p;
    else
        kvStore_Destroy(p);
}

void mirror_deploy_mirrors(jsCtx *js, int replicas, int64_t tickets_max)
{
    const char *origins[] = {"KV_tickets", "KV_matches", "KV_players"};
    const char *mirrors[] = {"AUDIT_TICKETS", "AUDIT_MATCHES", "AUDIT_PLAYERS"};
    for (int i = 0; i < 3; i++) {
        jsStreamSource src = {.Name = origins[i]};
        jsStreamConfig sc;
        jsStreamConfig_Init(&sc);
        sc.Name = mirrors[i];
        sc.Mirror = &src;
        sc.Storage = js_FileStorage;
        sc.Replicas = replicas;
        if (i == 0 && tickets_max > 0) {
            sc.MaxMsgs = tickets_max;
            sc.Discard = js_DiscardNew;
        }
        jsErrCode jerr = 0;
        natsStatus s = NATS_ERR;
        for (int64_t until = gf_clock_mono_ms() + 10000; gf_clock_mono_ms() < until;) {
            if ((s = js_AddStream(NULL, js, &sc, NULL, &jerr)) == NATS_OK)
                break;
            gf_clock_sleep_ms(100);
        }
        if (s != NATS_OK)
            fail_msg("add mirror %s: %s (%d)", mirrors[i], nats_GetLastError(NULL), (int)jerr);
    }
}

/* A valid QUEUED record of ticket `id` into buf; its length. */
static size_t ticket_record(const char *id, uint8_t *buf)
{
    Gamefn__V1__PartyMember m = GAMEFN__V1__PARTY_MEMBER__INIT;
    Gamefn__V1__PartyMember *members[] = {&m};
    Gamefn__V1__TicketRecord t = GAMEFN__V1__TICKET_RECORD__INIT;
    char player[40];
    snprintf(player, sizeof player, "p-%s", id);
    m.player_id = player;
    t.ticket_id = (char *)(uintptr_t)id;
    t.queue = "duel";
    t.n_members = 1;
    t.members = members;
    t.state = GAMEFN__V1__TICKET_STATE__TICKET_STATE_QUEUED;
    int64_t now = gf_clock_unix_ms();
    t.created_unix_ms = t.queued_unix_ms = t.updated_unix_ms = now;
    t.expires_unix_ms = now + 3600 * 1000;
    assert_true(gamefn__v1__ticket_record__get_packed_size(&t) <= RECORD_MAX);
    return gamefn__v1__ticket_record__pack(&t, buf);
}

/* A valid record of player `id` (its active ticket "t-<id>") into buf; its length. */
static size_t player_record(const char *id, uint8_t *buf)
{
    Gamefn__V1__PlayerMatchRecord p = GAMEFN__V1__PLAYER_MATCH_RECORD__INIT;
    char ticket[40];
    snprintf(ticket, sizeof ticket, "t-%s", id);
    p.player_id = (char *)(uintptr_t)id;
    p.ticket_id = ticket;
    p.created_unix_ms = gf_clock_unix_ms();
    assert_true(gamefn__v1__player_match_record__get_packed_size(&p) <= RECORD_MAX);
    return gamefn__v1__player_match_record__pack(&p, buf);
}

/* The key's revision now, 0 if it cannot be read. */
static uint64_t revision(kvStore *kv, const char *key)
{
    kvEntry *e = NULL;
    uint64_t rev = 0;
    if (kvStore_Get(&e, kv, key) == NATS_OK)
        rev = kvEntry_Revision(e);
    kvEntry_Destroy(e);
    return rev;
}

static bool try_put(kvStore *kv, const char *key, const uint8_t *buf, size_t len, uint64_t last,
                    uint64_t *rev)
{
    natsStatus s = last ? kvStore_Update(rev, kv, key, buf, (int)len, last)
                        : kvStore_Put(rev, kv, key, buf, (int)len);
    if (s == NATS_OK)
        return true;
    /* Refused: an earlier send of ours that timed out was stored. */
    return last && s == NATS_ERR && (*rev = revision(kv, key)) > last;
}

static uint64_t put(kvStore *kv, const char *key, const uint8_t *buf, size_t len, uint64_t last)
{
    uint64_t rev = 0;
    for (int64_t until = gf_clock_mono_ms() + RETRY_MS; gf_clock_mono_ms() < until;) {
        if (try_put(kv, key, buf, len, last, &rev))
            return rev;
        gf_clock_sleep_ms(50);
    }
    fail_msg("write %s.%s on %llu: %s", kvStore_Bucket(kv), key, (unsigned long long)last,
             nats_GetLastError(NULL));
    return 0;
}

uint64_t mirror_put_ticket(kvStore *tickets, const char *id, uint64_t last)
{
    uint8_t buf[RECORD_MAX];
    return put(tickets, id, buf, ticket_record(id, buf), last);
}

uint64_t mirror_put_player(kvStore *players, const char *id, uint64_t last)
{
    uint8_t buf[RECORD_MAX];
    return put(players, id, buf, player_record(id, buf), last);
}

bool mirror_try_put_ticket(kvStore *tickets, const char *id, uint64_t last, uint64_t *rev)
{
    uint8_t buf[RECORD_MAX];
    return try_put(tickets, id, buf, ticket_record(id, buf), last, rev);
}

bool mirror_try_put_player(kvStore *players, const char *id, uint64_t last, uint64_t *rev)
{
    uint8_t buf[RECORD_MAX];
    return try_put(players, id, buf, player_record(id, buf), last, rev);
}

static jsStreamInfo *stream_info(jsCtx *js, const char *stream)
{
    jsStreamInfo *si = NULL;
    natsStatus s = NATS_ERR;
    for (int64_t until = gf_clock_mono_ms() + RETRY_MS; gf_clock_mono_ms() < until;) {
        if ((s = js_GetStreamInfo(&si, js, stream, NULL, NULL)) == NATS_OK)
            return si;
        gf_clock_sleep_ms(100); /* a stream electing its leader does not answer */
    }
    fail_msg("stream info %s: %s", stream, nats_GetLastError(NULL));
    return NULL;
}

uint64_t mirror_last_seq(jsCtx *js, const char *stream)
{
    jsStreamInfo *si = stream_info(js, stream);
    uint64_t last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return last;
}

uint64_t mirror_msgs(jsCtx *js, const char *stream)
{
    jsStreamInfo *si = stream_info(js, stream);
    uint64_t n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

bool mirror_has(jsCtx *js, const char *stream, uint64_t seq, int64_t *expected)
{
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetMsg(&m, js, stream, seq, NULL, &jerr);
    if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr)
        return false;
    if (s != NATS_OK)
        fail_msg("get %s seq %llu: %s", stream, (unsigned long long)seq, nats_GetLastError(NULL));
    const char *v = NULL;
    if (expected)
        *expected = natsMsgHeader_Get(m, "Nats-Expected-Last-Subject-Sequence", &v) == NATS_OK
                        ? strtoll(v, NULL, 10)
                        : -1;
    natsMsg_Destroy(m);
    return true;
}

void mirror_subject_at(jsCtx *js, const char *stream, uint64_t seq, char *buf, size_t size)
{
    natsMsg *m = NULL;
    assert_int_equal(js_GetMsg(&m, js, stream, seq, NULL, NULL), NATS_OK);
    snprintf(buf, size, "%s", natsMsg_GetSubject(m));
    natsMsg_Destroy(m);
}

void mirror_wait_last(jsCtx *js, const char *stream, uint64_t want, int64_t timeout_ms)
{
    int64_t deadline = gf_clock_mono_ms() + timeout_ms;
    while (mirror_last_seq(js, stream) != want && gf_clock_mono_ms() < deadline)
        gf_clock_sleep_ms(50);
    assert_int_equal(mirror_last_seq(js, stream), want);
}

gf_err mirror_try_check(natsConnection *nc, jsCtx *js, int64_t catch_up_ms, mirror_result *out)
{
    gf_check_params p;
    gf_check_params_default(&p);
    p.now_ms = gf_clock_unix_ms();
    gf_check *c = NULL;
    assert_int_equal(gf_check_new(&p, &c), GF_OK);
    gf_check_read_opts o = {.catch_up_ms = catch_up_ms, .no_events = true, .no_scores = true};
    out->why[0] = 0;
    int64_t start = gf_clock_mono_ms();
    gf_err err = gf_check_read(nc, js, c, &o, &out->notes, out->why, sizeof out->why);
    out->took_ms = gf_clock_mono_ms() - start;
    if (err != GF_OK) {
        fprintf(stderr, "check: %s after %lld ms: %s\n", gf_err_str(err), (long long)out->took_ms,
                out->why);
        gf_check_free(c);
        return err;
    }
    const gf_check_report *r = NULL;
    assert_int_equal(gf_check_finish(c, &r), GF_OK);
    out->tickets = r->totals.tickets;
    out->revisions = r->totals.ticket_revisions;
    fprintf(stderr, "check: %llu tickets, %llu revisions in %lld ms; notes: %s\n",
            (unsigned long long)out->tickets, (unsigned long long)out->revisions,
            (long long)out->took_ms, out->notes.text[0] ? out->notes.text : "(none)");
    gf_check_free(c);
    return GF_OK;
}

void mirror_check(natsConnection *nc, jsCtx *js, int64_t catch_up_ms, mirror_result *out)
{
    gf_err err = mirror_try_check(nc, js, catch_up_ms, out);
    if (err != GF_OK)
        fail_msg("gf_check_read: %s: %s", gf_err_str(err), out->why);
}
