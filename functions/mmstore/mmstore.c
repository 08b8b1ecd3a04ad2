/*
 * mmstore.c — see mmstore.h.
 *
 * Design notes: single reads and writes are synchronous KV calls (gamefn/kv.h).
 * gf_mmstore_batch() pipelines: every op is a publish to $KV.<bucket>.<key> with
 * Nats-Expected-Last-Subject-Sequence (0 for a create; a delete adds KV-Operation: DEL)
 * and its own reply subject under one inbox, up to WINDOW in flight; the answers are
 * JetStream's publish acks ({"seq":N} or {"error":{"err_code":10071}} for a lost
 * compare-and-set, a real code, no error text). A create that conflicts is retried
 * synchronously through kvStore_Create, which also succeeds when the key's last
 * operation was a delete (expected sequence 0 does not). An op without an answer
 * within the JetStream API timeout has an unknown outcome (GF_ERR_TIMEOUT). When the
 * runtime's reliable publisher (gamefn/publish.h) lands, it replaces this loop: the
 * same ops, with resends of the same Msg-Id across a leader failover.
 */
#include "mmstore.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/tickets/outcome.h"
#include "gamefn/tickets/players.h"
#include "gamefn/tickets/status.h"
#include "gamefn/subjects.h"

static const char *const bucket_names[GF_MM__BUCKETS] = {"tickets", "players", "matches"};

struct gf_mmstore {
    natsConnection *nc;
    jsCtx *js;
    kvStore *kv[GF_MM__BUCKETS];
    atomic_llong reads, writes, conflicts, unknown, pushes, publishes;
};

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
    if (err != GF_OK) {
        gf_mmstore_close(s);
        return err;
    }
    *out = s;
    return GF_OK;
}

void gf_mmstore_close(gf_mmstore *s)
{
    if (!s)
        return;
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

gf_err gf_mmstore_write(gf_mmstore *s, gf_mm_op *op)
{
    kvStore *kv = s->kv[op->bucket];
    op->rev = 0;
    switch (op->kind) {
    case GF_MM_CREATE:
        op->err = gf_kv_create(kv, op->key, op->data, op->len, &op->rev);
        break;
    case GF_MM_UPDATE:
        op->err = gf_kv_update(kv, op->key, op->data, op->len, op->last, &op->rev);
        break;
    case GF_MM_DELETE:
        op->err = gf_kv_delete_if(s->js, kv, op->key, op->last);
        break;
    default:
        op->err = GF_ERR_INVALID;
    }
    atomic_fetch_add(&s->writes, 1);
    if (op->err == GF_ERR_CONFLICT)
        atomic_fetch_add(&s->conflicts, 1);
    else if (op->err != GF_OK)
        atomic_fetch_add(&s->unknown, 1);
    return op->err;
}

enum { WINDOW = 1024, BATCH_WAIT_MS = 5000 };

/* Sends op i with reply subject <inbox>.<i>. */
static natsStatus send_op(gf_mmstore *s, const gf_mm_op *op, const char *inbox, size_t i)
{
    char subject[256], reply[160], last[24];
    natsMsg *m = NULL;
    if (op->kind == GF_MM_PUBLISH)
        snprintf(subject, sizeof subject, "%s", op->key);
    else
        snprintf(subject, sizeof subject, "$KV.%s.%s", bucket_names[op->bucket], op->key);
    snprintf(reply, sizeof reply, "%s.%zu", inbox, i);
    snprintf(last, sizeof last, "%" PRIu64, op->kind == GF_MM_CREATE ? 0 : op->last);
    natsStatus st = natsMsg_Create(&m, subject, reply, op->data, (int)op->len);
    if (st == NATS_OK && op->kind == GF_MM_PUBLISH)
        st = natsMsgHeader_Set(m, "Nats-Msg-Id", op->msg_id);
    else if (st == NATS_OK)
        st = natsMsgHeader_Set(m, "Nats-Expected-Last-Subject-Sequence", last);
    if (st == NATS_OK && op->kind == GF_MM_DELETE)
        st = natsMsgHeader_Set(m, "KV-Operation", "DEL");
    if (st == NATS_OK)
        st = natsConnection_PublishMsg(s->nc, m);
    natsMsg_Destroy(m);
    return st;
}

/* A publish ack into op->err / op->rev. */
static void read_ack(gf_mm_op *op, natsMsg *m)
{
    json_t *j = NULL;
    op->err = GF_ERR_NATS;
    if (natsMsg_IsNoResponders(m)) {
        op->err = GF_ERR_UNAVAILABLE;
        return;
    }
    j = json_loadb(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), 0, NULL);
    json_t *e = json_object_get(j, "error");
    if (e) {
        json_int_t code = json_integer_value(json_object_get(e, "err_code"));
        op->err = code == 10071 ? GF_ERR_CONFLICT : GF_ERR_NATS;
    } else if (json_is_integer(json_object_get(j, "seq"))) {
        op->rev = (uint64_t)json_integer_value(json_object_get(j, "seq"));
        op->err = GF_OK;
    }
    json_decref(j);
}

gf_err gf_mmstore_batch(gf_mmstore *s, gf_mm_op *ops, size_t n)
{
    natsInbox *inbox = NULL;
    natsSubscription *sub = NULL;
    char wildcard[160];
    size_t sent = 0, answered = 0;
    gf_err first = GF_OK;
    if (n == 0)
        return GF_OK;
    for (size_t i = 0; i < n; i++) {
        ops[i].err = GF_ERR_TIMEOUT;
        ops[i].rev = 0;
    }
    if (natsInbox_Create(&inbox) != NATS_OK)
        return GF_ERR_NOMEM;
    snprintf(wildcard, sizeof wildcard, "%s.*", (const char *)inbox);
    if (natsConnection_SubscribeSync(&sub, s->nc, wildcard) != NATS_OK) {
        natsInbox_Destroy(inbox);
        return GF_ERR_UNAVAILABLE;
    }
    natsSubscription_SetPendingLimits(sub, -1, -1);
    int64_t deadline = gf_clock_mono_ms() + BATCH_WAIT_MS;
    while (answered < n && gf_clock_mono_ms() < deadline) {
        while (sent < n && sent - answered < WINDOW) {
            if (send_op(s, &ops[sent], (const char *)inbox, sent) != NATS_OK)
                ops[sent].err = GF_ERR_UNAVAILABLE;
            sent++;
        }
        natsMsg *m = NULL;
        int64_t left = deadline - gf_clock_mono_ms();
        if (natsSubscription_NextMsg(&m, sub, left > 0 ? left : 1) != NATS_OK)
            break;
        size_t i = (size_t)strtoull(strrchr(natsMsg_GetSubject(m), '.') + 1, NULL, 10);
        if (i < n && ops[i].err == GF_ERR_TIMEOUT) {
            read_ack(&ops[i], m);
            answered++;
        }
        natsMsg_Destroy(m);
    }
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    for (size_t i = 0; i < n; i++) {
        gf_mm_op *op = &ops[i];
        /* A create meets a delete marker as a conflict: kvStore_Create knows that case. */
        if (op->kind == GF_MM_CREATE && op->err == GF_ERR_CONFLICT)
            op->err = gf_kv_create(s->kv[op->bucket], op->key, op->data, op->len, &op->rev);
        atomic_fetch_add(op->kind == GF_MM_PUBLISH ? &s->publishes : &s->writes, 1);
        if (op->err == GF_ERR_CONFLICT)
            atomic_fetch_add(&s->conflicts, 1);
        else if (op->err != GF_OK)
            atomic_fetch_add(&s->unknown, 1);
        if (op->err != GF_OK && op->err != GF_ERR_CONFLICT && first == GF_OK)
            first = op->err;
    }
    return first;
}

gf_err gf_mmstore_publish(gf_mmstore *s, const char *subject, const char *msg_id, const void *data,
                          size_t len)
{
    jsPubOptions po;
    jsErrCode jerr = 0;
    jsPubOptions_Init(&po);
    po.MsgId = msg_id;
    atomic_fetch_add(&s->publishes, 1);
    natsStatus st = js_Publish(NULL, s->js, subject, data, (int)len, &po, &jerr);
    switch (st) {
    case NATS_OK:
        return GF_OK;
    case NATS_TIMEOUT:
        return GF_ERR_TIMEOUT;
    case NATS_NO_RESPONDERS:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
        return GF_ERR_UNAVAILABLE;
    default:
        return GF_ERR_NATS;
    }
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

gf_err gf_mmstore_abort_match(gf_mmstore *s, const char *match_id, int abort_reason,
                              const char *ticket_id, const char *decided_by, int64_t now_ms,
                              Gamefn__V1__MatchOutcome **out)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t rev = 0;
    gf_tickets_problem p;
    *out = NULL;
    gf_err err = gf_outcome_abort_pack(match_id, (Gamefn__V1__MatchAbortReason)abort_reason,
                                       ticket_id, NULL, decided_by, now_ms, &buf, &len, &p);
    if (err != GF_OK)
        return err;
    gf_mm_op op = {
        .kind = GF_MM_CREATE, .bucket = GF_MM_MATCHES, .key = match_id, .data = buf, .len = len};
    err = gf_mmstore_write(s, &op);
    if (err == GF_OK) {
        err = gf_outcome_decode(buf, len, match_id, out, &p);
        free(buf);
        return err;
    }
    free(buf);
    if (err != GF_ERR_CONFLICT)
        return err;
    /* Someone decided first: read what. */
    err = gf_mmstore_get(s, GF_MM_MATCHES, match_id, &buf, &len, &rev);
    if (err == GF_OK)
        err = gf_outcome_decode(buf, len, match_id, out, &p);
    free(buf);
    return err;
}

void gf_mmstore_clear_players(gf_mmstore *s, const Gamefn__V1__TicketRecord *rec)
{
    for (size_t i = 0; i < rec->n_members; i++) {
        const char *player = rec->members[i]->player_id;
        uint8_t *buf = NULL;
        size_t len = 0;
        uint64_t rev = 0;
        Gamefn__V1__PlayerMatchRecord *pr = NULL;
        if (gf_mmstore_get(s, GF_MM_PLAYERS, player, &buf, &len, &rev) == GF_OK &&
            gf_players_decode(buf, len, player, &pr, NULL) == GF_OK &&
            strcmp(pr->ticket_id, rec->ticket_id) == 0) {
            gf_mm_op op = {
                .kind = GF_MM_DELETE, .bucket = GF_MM_PLAYERS, .key = player, .last = rev};
            gf_mmstore_write(s, &op); /* a conflict: someone replaced or cleared it */
        }
        gf_players_free(pr);
        free(buf);
    }
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
