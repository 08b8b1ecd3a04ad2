/*
 * mmstore.c — see mmstore.h.
 *
 * Design notes:
 * - Every write goes through the runtime's reliable publisher (gamefn/publish.h), one
 *   per store: a compare-and-set is gf_publish_cas_send (a unique Nats-Msg-Id per
 *   change, resent with the same id through a leader failover or a server restart, a
 *   lost race reported from JetStream's 10071, a create that meets a delete marker
 *   handled by the publisher), a Match is gf_publish_send with its match id as
 *   Nats-Msg-Id. gf_mmstore_batch() sends every op of a batch before waiting for any
 *   answer, so a batch costs about one round trip, not one per op; single writes are the
 *   publisher's _sync wrappers.
 * - An op gets a definite answer (GF_OK, GF_ERR_CONFLICT) or, after GIVE_UP_MS without
 *   one, GF_ERR_TIMEOUT: its outcome is unknown and the caller re-reads. GIVE_UP_MS
 *   outlasts a stream-leader failover (4.5-7 s on a 3-node cluster, NATS-FACTS.md) so a
 *   failover costs latency, not unknown outcomes; it stays below the claim lease (10 s
 *   by default) and the request deadline.
 * - Single reads are synchronous KV gets (gamefn/kv.h); batched reads are pipelined
 *   direct gets on one long-lived subscription (mmstore_read.h). Status pushes are core
 *   publishes.
 */
#include "mmstore.h"
#include "mmstore_read.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "gamefn/publish.h"
#include "gamefn/tickets/outcome.h"
#include "gamefn/tickets/players.h"
#include "gamefn/tickets/status.h"
#include "gamefn/subjects.h"

enum { GIVE_UP_MS = 8000, WINDOW = 4096, CLOSE_WAIT_MS = 2000, READ_WAIT_MS = 5000 };

static const char *const bucket_names[GF_MM__BUCKETS] = {"tickets", "players", "matches"};
static const char *const stream_names[GF_MM__BUCKETS] = {"KV_tickets", "KV_players", "KV_matches"};

/* How AUDIT_TICKETS is read, found once at open: a direct get when it answers them (its
 * allow_direct: a request to a subject nothing listens on is not answered "no
 * responders" under $JS.API, it times out, so this is not probed per read), else the
 * JetStream API; not at all without the stream. */
typedef enum audit_read { AUDIT_NONE, AUDIT_DIRECT, AUDIT_API } audit_read;

struct gf_mmstore {
    natsConnection *nc;
    jsCtx *js;
    kvStore *kv[GF_MM__BUCKETS];
    gf_publish *pub;
    mm_reads *reads_mux;
    audit_read audit; /* how gf_mmstore_ticket_forgotten reads AUDIT_TICKETS */
    atomic_llong reads, writes, conflicts, unknown, pushes, publishes;
};

/* nats-server before 2.9.21 lets two compare-and-sets from the same revision both win on
 * a replicated stream (docs/OPERATIONS.md, "Matchmaking on a cluster"). The client cannot
 * learn the server's version, so a replicated bucket gets a loud warning at start. */
static void warn_if_replicated(jsCtx *js)
{
    for (int b = 0; b < GF_MM__BUCKETS; b++) {
        char stream[64];
        jsStreamInfo *si = NULL;
        snprintf(stream, sizeof stream, "KV_%s", bucket_names[b]);
        if (js_GetStreamInfo(&si, js, stream, NULL, NULL) == NATS_OK && si->Config &&
            si->Config->Replicas > 1)
            gf_log_warn("replicated matchmaking bucket: claims need nats-server >= 2.9.21 on a "
                        "cluster (2.9.10 lets two compare-and-sets of one revision both win); "
                        "see docs/OPERATIONS.md",
                        "bucket=%s replicas=%lld", bucket_names[b],
                        (long long)si->Config->Replicas);
        jsStreamInfo_Destroy(si);
    }
}

gf_err gf_mmstore_open(natsConnection *nc, jsCtx *js, gf_mmstore **out)
{
    gf_mmstore *s = calloc(1, sizeof *s);
    gf_err err = GF_OK;
    *out = NULL;
    if (!s)
        return GF_ERR_NOMEM;
    s->nc = nc;
    s->js = js;
    for (int b = 0; b < GF_MM__BUCKETS && err == GF_OK; b++)
        err = gf_kv_open(js, bucket_names[b], &s->kv[b]);
    if (err == GF_OK)
        err = gf_publish_open(
            nc, &(gf_publish_opts){.max_in_flight = WINDOW, .give_up_ms = GIVE_UP_MS}, &s->pub);
    if (err == GF_OK)
        err = mm_reads_open(nc, &s->reads_mux);
    if (err != GF_OK) {
        gf_mmstore_close(s);
        return err;
    }
    warn_if_replicated(js);
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus st = js_GetStreamInfo(&si, js, "AUDIT_TICKETS", NULL, &jerr);
    s->audit = st == NATS_OK ? (si->Config->AllowDirect ? AUDIT_DIRECT : AUDIT_API)
               : st == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr ? AUDIT_NONE
                                                                     : AUDIT_API;
    jsStreamInfo_Destroy(si);
    if (s->audit != AUDIT_DIRECT)
        gf_log_info("AUDIT_TICKETS is not read by direct get", "how=%s",
                    s->audit == AUDIT_NONE ? "not at all (no such stream)"
                                           : "JetStream API (no allow_direct)");
    *out = s;
    return GF_OK;
}

/* Whether `stream` holds a message on `subject`: GF_OK with *held, or the error. A
 * stream that does not exist holds nothing. */
static gf_err stream_holds(jsCtx *js, const char *stream, const char *subject, bool *held)
{
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    natsStatus st = js_GetLastMsg(&m, js, stream, subject, NULL, &jerr);
    natsMsg_Destroy(m);
    *held = st == NATS_OK;
    if (st == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr || jerr == JSStreamNotFoundErr) {
        *held = false;
        return GF_OK;
    }
    return st == NATS_OK ? GF_OK : gf_nats_err(st);
}

/* Whether `stream` (KV_tickets, or a mirror of it that answers direct gets) holds a
 * revision of tickets/<ticket_id>, by one direct get. Tickets are never deleted, so the
 * direct get's "deleted" (a marker, read as absent) does not arise. */
static gf_err ticket_held(gf_mmstore *s, const char *stream, const char *ticket_id, bool *held)
{
    uint8_t *val = NULL;
    size_t len = 0;
    uint64_t rev = 0;
    gf_err one = GF_OK;
    gf_err err = mm_reads_batch(s->reads_mux, stream, bucket_names[GF_MM_TICKETS], &ticket_id, 1,
                                READ_WAIT_MS, &val, &len, &rev, &one);
    free(val);
    atomic_fetch_add(&s->reads, 1);
    *held = one == GF_OK;
    return err == GF_OK ? GF_OK : one;
}

/* Whether AUDIT_TICKETS holds a revision of `ticket_id` (s->audit says how to ask: a
 * direct get is a cheap read; the JetStream API a request the server answers in JSON,
 * the message in base64). */
static gf_err audit_holds(gf_mmstore *s, const char *ticket_id, bool *held)
{
    char subject[192]; /* ticket ids are tokens of at most 64 bytes */
    *held = false;
    switch (s->audit) {
    case AUDIT_NONE:
        return GF_OK;
    case AUDIT_DIRECT:
        return ticket_held(s, "AUDIT_TICKETS", ticket_id, held);
    case AUDIT_API:
        break;
    }
    snprintf(subject, sizeof subject, "$KV.%s.%s", bucket_names[GF_MM_TICKETS], ticket_id);
    atomic_fetch_add(&s->reads, 1);
    return stream_holds(s->js, "AUDIT_TICKETS", subject, held);
}

gf_err gf_mmstore_ticket_forgotten(gf_mmstore *s, const char *ticket_id, bool *forgotten)
{
    bool in_audit = false, in_bucket = false;
    *forgotten = false;
    gf_err err = audit_holds(s, ticket_id, &in_audit);
    if (err == GF_OK && in_audit)
        err = ticket_held(s, stream_names[GF_MM_TICKETS], ticket_id, &in_bucket);
    if (err == GF_OK)
        *forgotten = in_audit && !in_bucket;
    return err;
}

void gf_mmstore_close(gf_mmstore *s)
{
    if (!s)
        return;
    gf_publish_close(s->pub, CLOSE_WAIT_MS);
    mm_reads_close(s->reads_mux);
    for (int b = 0; b < GF_MM__BUCKETS; b++)
        kvStore_Destroy(s->kv[b]);
    free(s);
}

gf_err gf_mmstore_get(gf_mmstore *s, gf_mm_bucket b, const char *key, uint8_t **val, size_t *len,
                      uint64_t *rev)
{
    kvEntry *e = NULL;
    *val = NULL;
    *len = 0;
    atomic_fetch_add(&s->reads, 1);
    gf_err err = gf_kv_get(s->kv[b], key, &e);
    if (err == GF_OK) {
        int n = kvEntry_ValueLen(e);
        *len = n > 0 ? (size_t)n : 0;
        *val = malloc(*len + 1);
        if (!*val)
            err = GF_ERR_NOMEM;
        else if (*len)
            memcpy(*val, kvEntry_Value(e), *len);
        *rev = kvEntry_Revision(e);
    }
    kvEntry_Destroy(e);
    return err;
}

gf_err gf_mmstore_get_batch(gf_mmstore *s, gf_mm_bucket b, const char *const *keys, size_t n,
                            uint8_t **vals, size_t *lens, uint64_t *revs, gf_err *errs)
{
    atomic_fetch_add(&s->reads, (long long)n);
    return mm_reads_batch(s->reads_mux, stream_names[b], bucket_names[b], keys, n, READ_WAIT_MS,
                          vals, lens, revs, errs);
}

/* Counts a finished op. */
static void count(gf_mmstore *s, const gf_mm_op *op)
{
    atomic_fetch_add(op->kind == GF_MM_PUBLISH ? &s->publishes : &s->writes, 1);
    if (op->err == GF_ERR_CONFLICT)
        atomic_fetch_add(&s->conflicts, 1);
    else if (op->err != GF_OK)
        atomic_fetch_add(&s->unknown, 1);
}

/* A batch in flight: how many ops still wait for their callback. */
typedef struct batch {
    pthread_mutex_t mu;
    pthread_cond_t done;
    size_t left;
} batch;

typedef struct pending {
    batch *b;
    gf_mm_op *op;
} pending;

static void on_done(const gf_publish_result *res, void *closure)
{
    pending *p = closure;
    p->op->err = res->err;
    p->op->rev = res->err == GF_OK ? res->seq : 0;
    p->op->js_code = res->js_code;
    p->op->full = gf_publish_full(res->err, res->js_code);
    pthread_mutex_lock(&p->b->mu);
    if (--p->b->left == 0)
        pthread_cond_signal(&p->b->done);
    pthread_mutex_unlock(&p->b->mu);
}

/* Hands op to the publisher; its callback reports to p. GF_OK when accepted. */
static gf_err send_op(gf_mmstore *s, gf_mm_op *op, pending *p)
{
    if (op->kind == GF_MM_PUBLISH)
        return gf_publish_send(s->pub, &(gf_publish_msg){.subject = op->key,
                                                         .msg_id = op->msg_id,
                                                         .data = op->data,
                                                         .len = op->len,
                                                         .done = on_done,
                                                         .closure = p});
    gf_publish_cas c = {.bucket = bucket_names[op->bucket],
                        .key = op->key,
                        .revision = op->last,
                        .data = op->data,
                        .len = op->len,
                        .done = on_done,
                        .closure = p};
    switch (op->kind) {
    case GF_MM_CREATE:
        c.kind = GF_PUBLISH_CAS_CREATE;
        break;
    case GF_MM_UPDATE:
        c.kind = GF_PUBLISH_CAS_UPDATE;
        break;
    case GF_MM_DELETE:
        c.kind = GF_PUBLISH_CAS_DELETE;
        c.data = NULL;
        c.len = 0;
        break;
    default:
        return GF_ERR_INVALID;
    }
    return gf_publish_cas_send(s->pub, &c);
}

gf_err gf_mmstore_batch(gf_mmstore *s, gf_mm_op *ops, size_t n)
{
    gf_err first = GF_OK;
    if (n == 0)
        return GF_OK;
    pending *ps = calloc(n, sizeof *ps);
    batch b = {.left = n};
    if (!ps) {
        for (size_t i = 0; i < n; i++)
            ops[i].err = GF_ERR_NOMEM;
        return GF_ERR_NOMEM;
    }
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.done, NULL);
    for (size_t i = 0; i < n; i++) {
        ops[i].err = GF_ERR_TIMEOUT;
        ops[i].rev = 0;
        ops[i].js_code = 0;
        ops[i].full = false;
        ps[i] = (pending){.b = &b, .op = &ops[i]};
        gf_err err = send_op(s, &ops[i], &ps[i]);
        if (err != GF_OK) { /* refused: no callback will come */
            ops[i].err = err;
            pthread_mutex_lock(&b.mu);
            b.left--;
            pthread_mutex_unlock(&b.mu);
        }
    }
    /* Every accepted op gets exactly one callback, at the latest after GIVE_UP_MS. */
    pthread_mutex_lock(&b.mu);
    while (b.left > 0)
        pthread_cond_wait(&b.done, &b.mu);
    pthread_mutex_unlock(&b.mu);
    pthread_cond_destroy(&b.done);
    pthread_mutex_destroy(&b.mu);
    free(ps);
    for (size_t i = 0; i < n; i++) {
        count(s, &ops[i]);
        if (ops[i].err != GF_OK && ops[i].err != GF_ERR_CONFLICT && first == GF_OK)
            first = ops[i].err;
    }
    return first;
}

gf_err gf_mmstore_write(gf_mmstore *s, gf_mm_op *op)
{
    gf_mmstore_batch(s, op, 1);
    return op->err;
}

gf_err gf_mmstore_publish(gf_mmstore *s, const char *subject, const char *msg_id, const void *data,
                          size_t len)
{
    gf_mm_op op = {
        .kind = GF_MM_PUBLISH, .key = subject, .msg_id = msg_id, .data = data, .len = len};
    return gf_mmstore_write(s, &op);
}

void gf_mmstore_push(gf_mmstore *s, const char *ticket_id, const void *data, size_t len)
{
    char subject[160];
    snprintf(subject, sizeof subject, "%s.%s", GF_WIRE_SUBJ_TICKET_STATUS, ticket_id);
    atomic_fetch_add(&s->pushes, 1);
    natsConnection_Publish(s->nc, subject, data, (int)len);
}

void gf_mmstore_push_record(gf_mmstore *s, const Gamefn__V1__TicketRecord *rec, uint64_t revision,
                            const char *note)
{
    gf_ticket_status st;
    uint8_t *buf = NULL;
    size_t len = 0;
    gf_ticket_status_of(rec, revision, note, &st);
    if (gf_ticket_status_pack(&st, &buf, &len) == GF_OK)
        gf_mmstore_push(s, rec->ticket_id, buf, len);
    free(buf);
}

gf_err gf_mmstore_decide(gf_mmstore *s, const char *match_id, const uint8_t *buf, size_t len,
                         Gamefn__V1__MatchOutcome **out, bool *created, bool *full)
{
    uint8_t *held = NULL;
    size_t held_len = 0;
    uint64_t rev = 0;
    gf_tickets_problem p;
    *out = NULL;
    if (created)
        *created = false;
    gf_mm_op op = {
        .kind = GF_MM_CREATE, .bucket = GF_MM_MATCHES, .key = match_id, .data = buf, .len = len};
    gf_err err = gf_mmstore_write(s, &op);
    if (full)
        *full = op.full;
    if (err == GF_OK) {
        if (created)
            *created = true;
        return gf_outcome_decode(buf, len, match_id, out, &p);
    }
    if (err != GF_ERR_CONFLICT)
        return err;
    /* Someone decided first: read what. */
    err = gf_mmstore_get(s, GF_MM_MATCHES, match_id, &held, &held_len, &rev);
    if (err == GF_OK)
        err = gf_outcome_decode(held, held_len, match_id, out, &p);
    free(held);
    return err;
}

gf_err gf_mmstore_abort_match(gf_mmstore *s, const char *match_id, int abort_reason,
                              const char *ticket_id, const char *decided_by, int64_t now_ms,
                              Gamefn__V1__MatchOutcome **out)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    gf_tickets_problem p;
    *out = NULL;
    gf_err err = gf_outcome_abort_pack(match_id, (Gamefn__V1__MatchAbortReason)abort_reason,
                                       ticket_id, NULL, decided_by, now_ms, &buf, &len, &p);
    if (err == GF_OK)
        err = gf_mmstore_decide(s, match_id, buf, len, out, NULL, NULL);
    free(buf);
    return err;
}

gf_err gf_mmstore_abort_matches(gf_mmstore *s, const char *const *match_ids, size_t n,
                                int abort_reason, const char *decided_by, int64_t now_ms,
                                Gamefn__V1__MatchOutcome **outs, gf_err *errs)
{
    gf_tickets_problem p;
    gf_err first = GF_OK;
    uint8_t **bufs = calloc(n ? n : 1, sizeof *bufs), **held = calloc(n ? n : 1, sizeof *held);
    size_t *lens = calloc(n ? n : 1, sizeof *lens), *held_lens = calloc(n ? n : 1, sizeof *lens);
    uint64_t *revs = calloc(n ? n : 1, sizeof *revs);
    gf_err *held_errs = calloc(n ? n : 1, sizeof *held_errs);
    const char **again = calloc(n ? n : 1, sizeof *again);
    size_t *at = calloc(n ? n : 1, sizeof *at), *slot = calloc(n ? n : 1, sizeof *slot);
    size_t nops = 0, nagain = 0;
    gf_mm_op *ops = calloc(n ? n : 1, sizeof *ops);
    for (size_t i = 0; i < n; i++) {
        outs[i] = NULL;
        errs[i] = GF_ERR_NOMEM;
    }
    if (!bufs || !held || !lens || !held_lens || !revs || !held_errs || !again || !at || !slot ||
        !ops)
        goto out;
    for (size_t i = 0; i < n; i++) {
        errs[i] = gf_outcome_abort_pack(match_ids[i], (Gamefn__V1__MatchAbortReason)abort_reason,
                                        NULL, NULL, decided_by, now_ms, &bufs[i], &lens[i], &p);
        if (errs[i] != GF_OK)
            continue;
        at[nops] = i;
        ops[nops++] = (gf_mm_op){.kind = GF_MM_CREATE,
                                 .bucket = GF_MM_MATCHES,
                                 .key = match_ids[i],
                                 .data = bufs[i],
                                 .len = lens[i]};
    }
    gf_mmstore_batch(s, ops, nops);
    for (size_t k = 0; k < nops; k++) {
        size_t i = at[k];
        errs[i] = ops[k].err;
        if (errs[i] == GF_OK) /* ours holds */
            errs[i] = gf_outcome_decode(bufs[i], lens[i], match_ids[i], &outs[i], &p);
        else if (errs[i] == GF_ERR_CONFLICT) { /* decided first by someone: read what */
            slot[k] = nagain;
            again[nagain++] = match_ids[i];
        }
    }
    if (nagain > 0)
        gf_mmstore_get_batch(s, GF_MM_MATCHES, again, nagain, held, held_lens, revs, held_errs);
    for (size_t k = 0; k < nops; k++) {
        size_t i = at[k];
        if (ops[k].err != GF_ERR_CONFLICT)
            continue;
        size_t j = slot[k];
        errs[i] = held_errs[j];
        if (errs[i] == GF_OK)
            errs[i] = gf_outcome_decode(held[j], held_lens[j], match_ids[i], &outs[i], &p);
    }
out:
    for (size_t i = 0; i < n; i++) {
        if (bufs)
            free(bufs[i]);
        if (held)
            free(held[i]);
        if (errs[i] != GF_OK && first == GF_OK)
            first = errs[i];
    }
    free(bufs);
    free(held);
    free(lens);
    free(held_lens);
    free(revs);
    free(held_errs);
    free(again);
    free(at);
    free(slot);
    free(ops);
    return first;
}

size_t gf_mmstore_release_players(gf_mmstore *s, const char *const *players, size_t n,
                                  const char *const *tickets, size_t nt)
{
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    uint8_t **vals = calloc(n ? n : 1, sizeof *vals);
    size_t *lens = calloc(n ? n : 1, sizeof *lens), failed = 0;
    uint64_t *revs = calloc(n ? n : 1, sizeof *revs);
    gf_err *errs = calloc(n ? n : 1, sizeof *errs);
    gf_mm_op *ops = calloc(n ? n : 1, sizeof *ops);
    if (!keys || !vals || !lens || !revs || !errs || !ops) {
        failed = n;
        goto out;
    }
    size_t nk = n;
    for (size_t i = 0; i < n; i++)
        keys[i] = players[i];
    /* A round: read every pending record, delete those that name one of the tickets; a
     * lost race (someone changed the record meanwhile) is read again next round. */
    for (int round = 0; round < 3 && nk > 0; round++) {
        gf_mmstore_get_batch(s, GF_MM_PLAYERS, keys, nk, vals, lens, revs, errs);
        size_t nops = 0;
        for (size_t i = 0; i < nk; i++) {
            Gamefn__V1__PlayerMatchRecord *pr = NULL;
            bool ours = false;
            if (errs[i] == GF_OK &&
                gf_players_decode(vals[i], lens[i], keys[i], &pr, NULL) == GF_OK)
                for (size_t k = 0; k < nt && !ours; k++)
                    ours = strcmp(pr->ticket_id, tickets[k]) == 0;
            gf_players_free(pr);
            free(vals[i]);
            vals[i] = NULL;
            if (errs[i] != GF_OK && errs[i] != GF_ERR_NOT_FOUND)
                failed++; /* unreadable: left for the stale-record rule */
            if (ours)
                ops[nops++] = (gf_mm_op){
                    .kind = GF_MM_DELETE, .bucket = GF_MM_PLAYERS, .key = keys[i], .last = revs[i]};
        }
        gf_mmstore_batch(s, ops, nops);
        nk = 0;
        for (size_t i = 0; i < nops; i++) {
            if (ops[i].err == GF_ERR_CONFLICT)
                keys[nk++] = ops[i].key; /* ops[] keeps its own copy of the pointer */
            else if (ops[i].err != GF_OK)
                failed++;
        }
    }
    failed += nk; /* still racing after three rounds */
out:
    free(keys);
    free(vals);
    free(lens);
    free(revs);
    free(errs);
    free(ops);
    return failed;
}

void gf_mmstore_clear_players(gf_mmstore *s, const Gamefn__V1__TicketRecord *rec)
{
    const char *players[GF_WIRE_PARTY_MAX];
    const char *ticket = rec->ticket_id;
    size_t n = 0;
    for (size_t i = 0; i < rec->n_members && n < GF_WIRE_PARTY_MAX; i++)
        players[n++] = rec->members[i]->player_id;
    gf_mmstore_release_players(s, players, n, &ticket, 1);
}

void gf_mmstore_stats_get(gf_mmstore *s, gf_mmstore_stats *out)
{
    out->reads = atomic_load(&s->reads);
    out->writes = atomic_load(&s->writes);
    out->conflicts = atomic_load(&s->conflicts);
    out->unknown = atomic_load(&s->unknown);
    out->pushes = atomic_load(&s->pushes);
    out->publishes = atomic_load(&s->publishes);
}
