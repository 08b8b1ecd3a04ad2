/*
 * check_read.c — a live deployment into a gf_check (gamefn/check/check_read.h): the
 * entry point and the reading machinery the other reader files share (check_read_int.h);
 * the matchmaking audit is read in check_read_mirror.c, the events and scores in
 * check_read_events.c.
 *
 * Design notes:
 * - One ordered push consumer per stream (nats.c re-creates it on a gap, flow control
 *   keeps the server from overrunning us): unfiltered, so an empty match can never leave
 *   us waiting, and bounded by the stream's last sequence when the read starts.
 * - The end of a read is the stream leader's, not the consumer's: the consumer (R1) lands
 *   on a random copy, and a node just restarted can hold an old one for seconds, its
 *   consumer reporting nothing pending (docs/NATS-FACTS.md §10). When it stops short of
 *   the leader's last sequence, the leader is asked (a message get, which only it
 *   answers) for the first message it holds past where the copy stopped: none up to the
 *   end (deleted, expired) ends the read; one means the copy lags, and it is waited for
 *   while it moves, COPY_WAIT_MS at most standing still, after which the read fails as
 *   unavailable: a short copy must never be judged as lost revisions or events.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "check_read_int.h"
#include "gamefn/clock.h"

enum {
    STALL_MS = 30000,     /* a consumer with messages pending that delivers none: broken */
    COPY_WAIT_MS = 15000, /* a copy behind its leader that takes no message: given up */
    POLL_MS = 500,        /* how often a copy behind its leader is looked at again */
};

static void vnote(ck_reader *r, const char *fmt, va_list ap)
{
    char line[400];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(r->notes->text);
    snprintf(r->notes->text + n, sizeof r->notes->text - n, "%s%s", n ? "; " : "", line);
}

void ck_read_note(ck_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vnote(r, fmt, ap);
    va_end(ap);
    r->notes->incomplete = true;
}

void ck_read_remark(ck_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vnote(r, fmt, ap);
    va_end(ap);
}

gf_err ck_read_fail(ck_reader *r, natsStatus s, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (s == NATS_TIMEOUT) {
        snprintf(r->why, r->why_size,
                 "%s: no answer from the JetStream API in time (is JetStream enabled? may this "
                 "user read it? docs/OPERATIONS.md, Permissions: the auditor)",
                 what);
        return GF_ERR_TIMEOUT;
    }
    snprintf(r->why, r->why_size, "%s: %s", what, natsStatus_GetText(s));
    bool gone =
        s == NATS_NO_RESPONDERS || s == NATS_CONNECTION_CLOSED || s == NATS_CONNECTION_DISCONNECTED;
    return gone ? GF_ERR_UNAVAILABLE : GF_ERR_NATS;
}

gf_err ck_read_info(ck_reader *r, const char *stream, jsStreamInfo **out)
{
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(out, r->js, stream, NULL, &jerr);
    if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr)
        return GF_ERR_NOT_FOUND;
    return s == NATS_OK ? GF_OK : ck_read_fail(r, s, "stream info %s", stream);
}

void ck_read_progress(ck_reader *r, const char *stream, uint64_t done, uint64_t total,
                      int64_t *last)
{
    int64_t now = gf_clock_mono_ms();
    if (r->o->progress && now - *last >= 250) {
        *last = now;
        r->o->progress(r->o->closure, stream, done, total);
    }
}

gf_err ck_read_msg_get(ck_reader *r, const char *stream, uint64_t seq, bool next, json_t **root,
                       json_t **msg)
{
    char subject[160], body[80];
    snprintf(subject, sizeof subject, "$JS.API.STREAM.MSG.GET.%s", stream);
    snprintf(body, sizeof body, "{\"seq\":%llu%s}", (unsigned long long)seq,
             next ? ",\"next_by_subj\":\">\"" : "");
    *root = *msg = NULL;
    natsMsg *reply = NULL;
    int64_t timeout = r->o->request_timeout_ms > 0 ? r->o->request_timeout_ms : 2000;
    natsStatus s = natsConnection_RequestString(&reply, r->nc, subject, body, timeout);
    if (s == NATS_OK && natsMsg_IsNoResponders(reply))
        s = NATS_NO_RESPONDERS;
    if (s != NATS_OK) {
        natsMsg_Destroy(reply);
        return ck_read_fail(r, s, "asking the leader of %s for sequence %llu%s", stream,
                            (unsigned long long)seq, next ? " on" : "");
    }
    *root = json_loadb(natsMsg_GetData(reply), (size_t)natsMsg_GetDataLength(reply), 0, NULL);
    natsMsg_Destroy(reply);
    json_t *m = json_object_get(*root, "message"), *error = json_object_get(*root, "error");
    if (json_is_integer(json_object_get(m, "seq"))) {
        *msg = m;
        return GF_OK;
    }
    if (json_integer_value(json_object_get(error, "err_code")) == JSNoMessageFoundErr)
        return GF_OK;
    const char *what = json_string_value(json_object_get(error, "description"));
    snprintf(r->why, r->why_size, "asking the leader of %s for sequence %llu%s: %s", stream,
             (unsigned long long)seq, next ? " on" : "",
             what ? what : "an answer without a message");
    return GF_ERR_NATS;
}

uint64_t ck_read_msg_seq(const json_t *msg)
{
    return (uint64_t)json_integer_value(json_object_get(msg, "seq"));
}

/* The first sequence at or after `from` that the leader of `stream` holds, in *next (0:
 * none). */
static gf_err leader_next(ck_reader *r, const char *stream, uint64_t from, uint64_t *next)
{
    json_t *root = NULL, *msg = NULL;
    gf_err err = ck_read_msg_get(r, stream, from, true, &root, &msg);
    *next = msg ? ck_read_msg_seq(msg) : 0;
    json_decref(root);
    return err;
}

/* Where an ordered read stands against the stream leader's last sequence end_seq. */
typedef struct copy_read {
    uint64_t at;     /* the last sequence the consumer delivered; first - 1 before any */
    bool copy_end;   /* its copy has nothing more: NumPending 0, or nothing delivered yet */
    int64_t moved;   /* when it last delivered (monotonic ms) */
    uint64_t leader; /* the first sequence past `at` the leader holds (0: none) */
} copy_read;

/* Whether the read is over at a copy's end: the leader holds nothing in at+1..end_seq
 * (removed by limits, expiry or a delete since stream info). Otherwise the copy lags. */
static gf_err copy_done(ck_reader *r, const char *stream, copy_read *cr, uint64_t end_seq,
                        bool *done)
{
    gf_err err = leader_next(r, stream, cr->at + 1, &cr->leader);
    *done = err == GF_OK && (cr->leader == 0 || cr->leader > end_seq);
    return err;
}

/* A copy that stood still COPY_WAIT_MS while its leader held more: GF_ERR_UNAVAILABLE. */
static gf_err copy_behind(ck_reader *r, const char *stream, const copy_read *cr, uint64_t end_seq,
                          int64_t idle_ms)
{
    snprintf(r->why, r->why_size,
             "reading %s: the copy read is behind the stream leader (read up to sequence %llu "
             "of %llu, the leader holds %llu; no new message for %lld ms): a node still "
             "catching up after a restart? try again",
             stream, (unsigned long long)cr->at, (unsigned long long)end_seq,
             (unsigned long long)cr->leader, (long long)idle_ms);
    return GF_ERR_UNAVAILABLE;
}

gf_err ck_read_ordered(ck_reader *r, const char *stream, const jsStreamInfo *si, uint64_t first,
                       uint64_t last, ck_read_msg_fn fn, const char *prefix, uint64_t *got,
                       uint64_t *seen)
{
    if (got)
        *got = *seen = 0;
    if (si->State.Msgs == 0 || last < si->State.FirstSeq || first > si->State.LastSeq)
        return GF_OK;
    int64_t since_ns = r->o->since_ms * 1000000;
    if (since_ns > 0 && si->State.LastTime < since_ns && !got)
        return GF_OK;
    /* From the first message, not DeliverByStartTime: on 2.9.10 a consumer started by
     * time on a mirror was seen to deliver nothing at all (once, under load); the
     * messages before since_ns are skipped here instead. */
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Ordered = true;
    if (first > 0) {
        so.Config.DeliverPolicy = js_DeliverByStartSequence;
        so.Config.OptStartSeq = first;
    }
    natsSubscription *sub = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_SubscribeSync(&sub, r->js, ">", NULL, &so, &jerr);
    if (s != NATS_OK)
        return ck_read_fail(r, s, "cannot read %s (ordered consumer, error %d)", stream, (int)jerr);
    natsSubscription_SetPendingLimits(sub, 1000000, 1024 * 1024 * 1024);
    gf_err err = GF_OK;
    uint64_t done = 0; /* messages read (fed or skipped as older than since) */
    uint64_t end_seq = last < si->State.LastSeq ? last : si->State.LastSeq;
    uint64_t total = first == 0 ? si->State.Msgs : end_seq >= first ? end_seq - first + 1 : 0;
    int64_t shown = gf_clock_mono_ms();
    copy_read cr = {first > 0 ? first - 1 : 0, true, shown, 0};
    char label[160];
    snprintf(label, sizeof label, "%s (waiting for a copy behind its leader)", stream);
    for (;;) {
        natsMsg *m = NULL;
        jsMsgMetaData *meta = NULL;
        s = natsSubscription_NextMsg(&m, sub, POLL_MS);
        if (s == NATS_TIMEOUT) {
            int64_t idle = gf_clock_mono_ms() - cr.moved;
            bool over = false;
            if (cr.copy_end && (err = copy_done(r, stream, &cr, end_seq, &over)) != GF_OK)
                break;
            if (over)
                break;
            if (cr.copy_end && idle >= COPY_WAIT_MS) {
                err = copy_behind(r, stream, &cr, end_seq, idle);
                break;
            }
            if (idle < STALL_MS) {
                if (cr.copy_end)
                    ck_read_progress(r, label, done, total, &shown);
                continue;
            }
        }
        if (s != NATS_OK) {
            snprintf(r->why, r->why_size, "reading %s stalled after %llu messages: %s", stream,
                     (unsigned long long)done, natsStatus_GetText(s));
            err = s == NATS_TIMEOUT ? GF_ERR_TIMEOUT : GF_ERR_UNAVAILABLE;
            break;
        }
        s = natsMsg_GetMetaData(&meta, m);
        if (s != NATS_OK) {
            natsMsg_Destroy(m);
            err = ck_read_fail(r, s, "reading %s: a message without metadata", stream);
            break;
        }
        uint64_t seq = meta->Sequence.Stream;
        cr.at = seq;
        cr.copy_end = meta->NumPending == 0;
        cr.moved = gf_clock_mono_ms();
        if (seq <= last && got && (*got)++ == 0)
            *seen = seq;
        if (seq <= last && meta->Timestamp >= since_ns)
            err = fn(r, m, meta, prefix);
        done++;
        jsMsgMetaData_Destroy(meta);
        natsMsg_Destroy(m);
        ck_read_progress(r, stream, done, total, &shown);
        if (err != GF_OK || seq >= last)
            break;
        /* The copy's end short of the leader's: asked at once, so that a stream whose
         * last messages were deleted is not waited for; not again while the copy, catching
         * up, has yet to deliver the message the leader last named. */
        bool over = seq >= end_seq;
        if (!over && cr.copy_end && cr.leader <= seq &&
            (err = copy_done(r, stream, &cr, end_seq, &over)) != GF_OK)
            break;
        if (over)
            break;
    }
    if (r->o->progress)
        r->o->progress(r->o->closure, stream, done, done);
    /* Destroy without Unsubscribe: the ephemeral consumer is left to the server, which
     * removes it once idle (a delete request needs a permission a reader has no need
     * for: deploy/nats/accounts.conf, the auditor). */
    natsSubscription_Destroy(sub);
    return err;
}

gf_err gf_check_read(natsConnection *nc, jsCtx *js, gf_check *c, const gf_check_read_opts *o,
                     gf_check_read_notes *notes, char *why, size_t why_size)
{
    ck_reader r = {nc, js, c, o, notes, why, why_size};
    memset(notes, 0, sizeof *notes);
    if (why_size)
        why[0] = 0;
    gf_err err = ck_read_audit(&r);
    if (err == GF_OK && !o->no_events)
        err = ck_read_events(&r);
    if (err == GF_ERR_NOMEM)
        snprintf(why, why_size, "out of memory");
    return err;
}
