/*
 * check_read.c — a live deployment into a gf_check (gamefn/check/check_read.h).
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
 * - A mirror is read only once it holds every revision its bucket had when we looked:
 *   otherwise the last writes would look lost. We wait while it moves; one that took no
 *   revision for catch_up_ms has stalled (docs/NATS-FACTS.md §6: on 2.9.10 nothing a
 *   client can send restarts a mirror's consumer), and the revisions it lacks are read
 *   from its bucket's own stream, which holds them with the same sequence numbers as
 *   long as the bucket's history and TTL keep them (a note names any that are gone).
 * - A mirror's records are judged by their sequences, as revisions: one that stores
 *   messages at other sequences than its bucket (shifted: docs/NATS-FACTS.md §6) is not
 *   read at all, and says so. A few sequences both hold are compared by message get
 *   (shift_find): cheap next to the read, and a shift lasts to the mirror's end until a
 *   restart, which leaves it in the middle, hence samples spread over the range.
 * - MATCHES is a work queue: a second consumer is refused there, so what is left in it
 *   (matches not yet allocated) is read by sequence, a few at most.
 * - Scores come from the leaderboard's query endpoint, the players' view of the
 *   effects, after its consumers drained.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gamefn/check/check_read.h"
#include "gamefn/clock.h"
#include "gamefn/subjects.h"
#include "gamefn/v1/leaderboard.pb-c.h"
#include "gamefn/wire_error.h"

enum {
    MATCHES_MAX_SPAN = 20000,
    PAGE = 100,
    STALL_MS = 30000,     /* a consumer with messages pending that delivers none: broken */
    COPY_WAIT_MS = 15000, /* a copy behind its leader that takes no message: given up */
    POLL_MS = 500,        /* how often a copy behind its leader is looked at again */
};

typedef struct reader {
    natsConnection *nc;
    jsCtx *js;
    gf_check *c;
    const gf_check_read_opts *o;
    gf_check_read_notes *notes;
    char *why;
    size_t why_size;
} reader;

typedef gf_err (*msg_fn)(reader *r, natsMsg *m, const jsMsgMetaData *meta, const char *prefix);

static void vnote(reader *r, const char *fmt, va_list ap)
{
    char line[400];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(r->notes->text);
    snprintf(r->notes->text + n, sizeof r->notes->text - n, "%s%s", n ? "; " : "", line);
}

/* What the read could not do: the report is incomplete. */
static void note(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vnote(r, fmt, ap);
    va_end(ap);
    r->notes->incomplete = true;
}

/* What the read left out on purpose, without loss to any count. */
static void remark(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void remark(reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vnote(r, fmt, ap);
    va_end(ap);
}

static gf_err fail(reader *r, natsStatus s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static gf_err fail(reader *r, natsStatus s, const char *fmt, ...)
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

/* Stream info; GF_ERR_NOT_FOUND when the stream does not exist. */
static gf_err info(reader *r, const char *stream, jsStreamInfo **out)
{
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(out, r->js, stream, NULL, &jerr);
    if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr)
        return GF_ERR_NOT_FOUND;
    return s == NATS_OK ? GF_OK : fail(r, s, "stream info %s", stream);
}

static void progress(reader *r, const char *stream, uint64_t done, uint64_t total, int64_t *last)
{
    int64_t now = gf_clock_mono_ms();
    if (r->o->progress && now - *last >= 250) {
        *last = now;
        r->o->progress(r->o->closure, stream, done, total);
    }
}

/* A message get of `stream` (STREAM.MSG.GET: only its leader answers it; a direct get may
 * be answered by a lagging copy, and nats.c 3.4.1 has no call for next_by_subj): the
 * message at `seq`, or with `next` the first it holds at or after `seq`. *root receives
 * the answer (the caller's, json_decref) and *msg its "message" object: NULL when the
 * stream holds none there. */
static gf_err msg_get(reader *r, const char *stream, uint64_t seq, bool next, json_t **root,
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
        return fail(r, s, "asking the leader of %s for sequence %llu%s", stream,
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

static uint64_t msg_seq(const json_t *msg)
{
    return (uint64_t)json_integer_value(json_object_get(msg, "seq"));
}

/* The first sequence at or after `from` that the leader of `stream` holds, in *next (0:
 * none). */
static gf_err leader_next(reader *r, const char *stream, uint64_t from, uint64_t *next)
{
    json_t *root = NULL, *msg = NULL;
    gf_err err = msg_get(r, stream, from, true, &root, &msg);
    *next = msg ? msg_seq(msg) : 0;
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
static gf_err copy_done(reader *r, const char *stream, copy_read *cr, uint64_t end_seq, bool *done)
{
    gf_err err = leader_next(r, stream, cr->at + 1, &cr->leader);
    *done = err == GF_OK && (cr->leader == 0 || cr->leader > end_seq);
    return err;
}

/* A copy that stood still COPY_WAIT_MS while its leader held more: GF_ERR_UNAVAILABLE. */
static gf_err copy_behind(reader *r, const char *stream, const copy_read *cr, uint64_t end_seq,
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

/* Every message of `stream` with sequence first..last (first 0: from its first message)
 * stored at or after since_ms, in order, through fn. *got (may be NULL): how many of
 * first..last the stream still held, whatever their time, the first of them in *seen.
 * The read ends at `last` or the leader's last sequence in `si`, whichever is lower, or
 * earlier where the leader no longer holds the messages up to there (design notes). */
static gf_err read_ordered(reader *r, const char *stream, const jsStreamInfo *si, uint64_t first,
                           uint64_t last, msg_fn fn, const char *prefix, uint64_t *got,
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
        return fail(r, s, "cannot read %s (ordered consumer, error %d)", stream, (int)jerr);
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
                    progress(r, label, done, total, &shown);
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
            err = fail(r, s, "reading %s: a message without metadata", stream);
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
        progress(r, stream, done, total, &shown);
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

/* ---- the AUDIT_* mirrors ---------------------------------------------------------------- */

static gf_err kv_record(reader *r, natsMsg *m, const jsMsgMetaData *meta, const char *prefix,
                        gf_err (*feed)(gf_check *, const gf_check_record *))
{
    const char *subject = natsMsg_GetSubject(m), *op = NULL;
    size_t n = strlen(prefix);
    gf_check_record rec = {meta->Sequence.Stream,
                           meta->Timestamp,
                           "",
                           GF_CHECK_PUT,
                           (const uint8_t *)natsMsg_GetData(m),
                           (size_t)natsMsg_GetDataLength(m)};
    if (strncmp(subject, prefix, n) == 0)
        rec.key = subject + n;
    if (natsMsgHeader_Get(m, "KV-Operation", &op) == NATS_OK && op) {
        rec.op = strcmp(op, "PURGE") == 0 ? GF_CHECK_PURGE : GF_CHECK_DEL;
        rec.value = NULL;
        rec.len = 0;
    }
    return feed(r->c, &rec);
}

static gf_err on_ticket(reader *r, natsMsg *m, const jsMsgMetaData *meta, const char *prefix)
{
    return kv_record(r, m, meta, prefix, gf_check_ticket);
}

static gf_err on_outcome(reader *r, natsMsg *m, const jsMsgMetaData *meta, const char *prefix)
{
    return kv_record(r, m, meta, prefix, gf_check_outcome);
}

static gf_err on_player(reader *r, natsMsg *m, const jsMsgMetaData *meta, const char *prefix)
{
    return kv_record(r, m, meta, prefix, gf_check_player);
}

/* ---- a shifted mirror: not the origin's messages at the origin's sequences --------------- */

/* Where a mirror was found to differ from its origin: sequence `at` (0: nowhere). */
typedef struct shift {
    uint64_t at;
    char mirror_key[64], origin_key[64];
} shift;

static bool same_field(const json_t *a, const json_t *b, const char *field)
{
    const json_t *x = json_object_get(a, field), *y = json_object_get(b, field);
    return (!x && !y) || (x && y && json_equal(x, y)); /* "data" is left out when empty */
}

static void key_of(const json_t *msg, const char *prefix, char *buf, size_t size)
{
    const char *subject = json_string_value(json_object_get(msg, "subject"));
    size_t n = strlen(prefix);
    if (!subject)
        subject = "?";
    snprintf(buf, size, "%s", strncmp(subject, prefix, n) == 0 ? subject + n : subject);
}

/* Compares the origin's first message at or after `from` (if it is at most `last`) with
 * the mirror's message at the same sequence, if it holds one. Sequence, subject, write
 * time (nanoseconds, copied from the origin) and payload: a mirror stores its origin's
 * message with all of them, so any difference is a message stored at another sequence.
 * *compared: the sequence looked at (0: none up to `last`). */
static gf_err shift_probe(reader *r, const char *mirror, const char *origin, const char *prefix,
                          uint64_t from, uint64_t last, uint64_t *compared, shift *sh)
{
    json_t *oroot = NULL, *om = NULL, *mroot = NULL, *mm = NULL;
    *compared = 0;
    gf_err err = msg_get(r, origin, from, true, &oroot, &om);
    if (err == GF_OK && om && msg_seq(om) <= last) {
        *compared = msg_seq(om);
        err = msg_get(r, mirror, *compared, false, &mroot, &mm);
    }
    if (err == GF_OK && mm &&
        !(same_field(om, mm, "subject") && same_field(om, mm, "time") &&
          same_field(om, mm, "data"))) {
        sh->at = *compared;
        key_of(mm, prefix, sh->mirror_key, sizeof sh->mirror_key);
        key_of(om, prefix, sh->origin_key, sizeof sh->origin_key);
        if (strcmp(sh->mirror_key, sh->origin_key) == 0)
            snprintf(sh->origin_key, sizeof sh->origin_key, "another write of %.40s",
                     sh->mirror_key);
    }
    json_decref(oroot);
    json_decref(mroot);
    return err;
}

/* Whether `mirror` holds its origin's messages at its origin's sequences, from samples:
 * on 2.9.10 a refused copied message that ends its delivery batch is counted (stream.go
 * clfs) and every later copy is stored at its origin sequence minus the refusals
 * (docs/NATS-FACTS.md §6), so its revisions are wrong. Only sequences both still hold
 * can be compared: first..last is where they overlap. A shift lasts to the mirror's end
 * unless the server restarted since (the count is not kept), so the samples are spread
 * over the range, last included, in order: the first difference found is the lowest
 * sampled. 2 message gets a sample, at most SHIFT_SAMPLES + 1 samples. */
static gf_err shift_find(reader *r, const char *mirror, const char *origin, const char *prefix,
                         uint64_t first, uint64_t last, shift *sh)
{
    enum { SHIFT_SAMPLES = 8 };
    gf_err err = GF_OK;
    uint64_t done = 0;
    sh->at = 0;
    for (int i = 0; i <= SHIFT_SAMPLES && err == GF_OK && sh->at == 0 && first > 0; i++) {
        uint64_t from = first + (last - first) / SHIFT_SAMPLES * (uint64_t)i;
        if (i == SHIFT_SAMPLES)
            from = last;
        if (from <= done)
            from = done + 1;
        if (from > last)
            break;
        err = shift_probe(r, mirror, origin, prefix, from, last, &done, sh);
        if (done == 0)
            break; /* the origin holds nothing more up to last */
    }
    return err;
}

/* What a mirror holds against its origin once we stopped waiting for it. */
typedef struct catch_up {
    uint64_t last;         /* the mirror's last sequence: what to read from it */
    uint64_t want;         /* the origin's last sequence when we looked */
    uint64_t origin_first; /* the origin's first sequence then; 0: empty or missing */
    int64_t idle_ms;       /* how long the mirror had taken no revision when we gave up */
    int64_t active_ms;     /* the server's last contact with the mirror's consumer; -1 unknown */
    shift sh;              /* where the mirror differs from its origin, if it was found to */
} catch_up;

/* Samples the sequences `mirror` (stream info si) and its origin both hold (shift_find). */
static gf_err shifted(reader *r, const char *mirror, const char *origin, const char *prefix,
                      const jsStreamInfo *si, catch_up *cu)
{
    uint64_t first = si->State.FirstSeq > cu->origin_first ? si->State.FirstSeq : cu->origin_first;
    if (cu->origin_first == 0 || si->State.Msgs == 0 || first > si->State.LastSeq)
        return GF_OK;
    return shift_find(r, mirror, origin, prefix, first, si->State.LastSeq, &cu->sh);
}

/* Waits until `mirror` holds every revision `origin` held when we looked, for as long as
 * it keeps taking revisions: catch_up_ms is the longest it may stand still. The server's
 * own recovery of a mirror (stall noticed after 3 s, retries at most every 2 s, a create
 * given 5 s: 2.9.10 stream.go processMirrorMsgs, setupMirrorConsumer) fits in the default
 * 10 s; a slow mirror that moves is waited for, with progress shown. A shifted mirror
 * stays as many sequences behind as it refused, moving while its bucket is written: it
 * is looked for while we wait (every SHIFT_RECHECK_MS), and ends the wait (cu->sh). */
static gf_err caught_up(reader *r, const char *mirror, const char *origin, const char *prefix,
                        jsStreamInfo **si, catch_up *cu)
{
    enum { SHIFT_RECHECK_MS = 2000 };
    jsStreamInfo *o = NULL;
    gf_err err = info(r, origin, &o);
    memset(cu, 0, sizeof *cu);
    cu->want = err == GF_OK ? o->State.LastSeq : 0;
    cu->origin_first = err == GF_OK && o->State.Msgs > 0 ? o->State.FirstSeq : 0;
    cu->active_ms = -1;
    jsStreamInfo_Destroy(o);
    if (err != GF_OK && err != GF_ERR_NOT_FOUND)
        return err;
    int64_t wait = r->o->catch_up_ms > 0 ? r->o->catch_up_ms : 10000;
    int64_t moved = gf_clock_mono_ms(), shown = moved, probe = moved;
    uint64_t seen = 0;
    char label[160];
    snprintf(label, sizeof label, "%s (catching up with %s)", mirror, origin);
    for (;;) {
        err = info(r, mirror, si);
        if (err != GF_OK)
            return err;
        cu->last = (*si)->State.LastSeq;
        if (cu->last >= cu->want)
            return GF_OK;
        int64_t now = gf_clock_mono_ms();
        if (now >= probe) {
            probe = now + SHIFT_RECHECK_MS;
            err = shifted(r, mirror, origin, prefix, *si, cu);
            if (err != GF_OK || cu->sh.at)
                return err;
        }
        if (cu->last > seen) {
            seen = cu->last;
            moved = now;
        }
        progress(r, label, cu->last, cu->want, &shown);
        if (now - moved >= wait) {
            cu->idle_ms = now - moved;
            if ((*si)->Mirror)
                cu->active_ms = (*si)->Mirror->Active / 1000000;
            return GF_OK;
        }
        jsStreamInfo_Destroy(*si);
        *si = NULL;
        gf_clock_sleep_ms(100);
    }
}

/* The revisions last+1..want a stalled mirror lacks, read from its origin: a mirror
 * stores the origin's messages with the origin's sequences, subjects, headers and
 * timestamps (stream.go processInboundMirrorMsg), so they are the records the mirror
 * would have held. The origin keeps only the bucket's history per key and its TTL: a
 * revision it no longer holds is lost to the audit, and noted. */
static gf_err read_tail(reader *r, const char *mirror, const char *origin, const catch_up *cu,
                        msg_fn fn, const char *prefix)
{
    jsStreamInfo *o = NULL;
    uint64_t got = 0, seen = 0, lacking = cu->want - cu->last;
    gf_err err = info(r, origin, &o);
    if (err == GF_OK)
        err = read_ordered(r, origin, o, cu->last + 1, cu->want, fn, prefix, &got, &seen);
    jsStreamInfo_Destroy(o);
    if (err != GF_OK && err != GF_ERR_NOT_FOUND)
        return err;
    char active[64] = "";
    if (cu->active_ms >= 0)
        snprintf(active, sizeof active, ", its consumer last heard %lld ms ago",
                 (long long)cu->active_ms);
    if (got < lacking)
        note(r,
             "%s stopped at revision %llu (no new revision for %lld ms%s); %s holds %llu of "
             "the %llu after it, read from there; the other %llu are gone: not checked",
             mirror, (unsigned long long)cu->last, (long long)cu->idle_ms, active, origin,
             (unsigned long long)got, (unsigned long long)lacking,
             (unsigned long long)(lacking - got));
    else
        remark(r,
               "%s stopped at revision %llu (no new revision for %lld ms%s): revisions %llu "
               "to %llu read from %s (docs/OPERATIONS.md, a stalled audit mirror)",
               mirror, (unsigned long long)cu->last, (long long)cu->idle_ms, active,
               (unsigned long long)cu->last + 1, (unsigned long long)cu->want, origin);
    r->notes->stalled_mirror = true;
    return GF_OK;
}

/* A size limit on an audit mirror loses revisions nobody expired: with discard old it
 * drops its oldest at the limit (silently: the read below counts from the first message
 * it finds, as for max_age), with discard new it stops copying (read_tail). Its first
 * revision younger than max_age (or any first revision past 1 with no max_age) means the
 * revisions before it went to the limit: the tickets they named are not checked. */
static void limit_dropped(reader *r, const char *mirror, const jsStreamInfo *si)
{
    enum { AGE_SLACK_MS = 60 * 1000 };
    const jsStreamConfig *c = si->Config;
    int64_t first_ns = si->State.FirstTime, since_ns = r->o->since_ms * 1000000;
    if ((c->MaxMsgs <= 0 && c->MaxBytes <= 0) || si->State.FirstSeq <= 1 ||
        (since_ns > 0 && first_ns <= since_ns))
        return;
    if (c->MaxAge > 0 &&
        first_ns <= (gf_clock_unix_ms() + AGE_SLACK_MS) * 1000000 - (int64_t)c->MaxAge)
        return; /* its oldest is as old as max_age: expired, not dropped */
    note(r,
         "%s starts at revision %llu, younger than its max_age: its size limit (max_msgs "
         "%lld, max_bytes %lld) dropped the revisions before it, and what they named is not "
         "checked (an audit mirror needs no size limit: docs/OPERATIONS.md, Storage full)",
         mirror, (unsigned long long)si->State.FirstSeq, (long long)c->MaxMsgs,
         (long long)c->MaxBytes);
}

static gf_err read_mirror(reader *r, const char *mirror, const char *bucket, msg_fn fn,
                          gf_check_source src)
{
    char origin[96], prefix[96];
    snprintf(origin, sizeof origin, "KV_%s", bucket);
    snprintf(prefix, sizeof prefix, "$KV.%s.", bucket);
    jsStreamInfo *si = NULL;
    catch_up cu;
    gf_err err = caught_up(r, mirror, origin, prefix, &si, &cu);
    if (err == GF_ERR_NOT_FOUND) {
        char why[160];
        snprintf(why, sizeof why, "stream %s does not exist (no audit mirror of %s)", mirror,
                 bucket);
        gf_check_missing(r->c, src, why);
        note(r, "%s", why);
        r->notes->missing_audit = true;
        return GF_OK;
    }
    /* Looked for again at the end of the wait: a mirror that shifted meanwhile, or one
     * that caught up at once (never looked at in caught_up). */
    if (err == GF_OK && cu.sh.at == 0)
        err = shifted(r, mirror, origin, prefix, si, &cu);
    if (err == GF_OK && cu.sh.at) {
        /* Its records would be judged under wrong revisions (a ticket's claim under the
         * revision of another's): none of them is read, and the counts that need them are
         * reported not checked. */
        char why[160];
        snprintf(why, sizeof why, "%s is shifted against its bucket (its message %llu): not read",
                 mirror, (unsigned long long)cu.sh.at);
        gf_check_missing(r->c, src, why);
        note(r,
             "%s is shifted against %s: its message %llu (%s) is not %s' message %llu (%s), "
             "later writes are stored at lower sequences: not read, its revisions would be "
             "wrong; delete and provision it again (docs/OPERATIONS.md, A shifted audit "
             "mirror)",
             mirror, origin, (unsigned long long)cu.sh.at, cu.sh.mirror_key, origin,
             (unsigned long long)cu.sh.at, cu.sh.origin_key);
        r->notes->shifted_mirror = true;
        jsStreamInfo_Destroy(si);
        return GF_OK;
    }
    /* A mirror holds every sequence of its origin from its first on, except those its
     * origin had dropped (history, TTL) before the mirror copied them: stream.go skipMsgs
     * leaves a hole. Those revisions are lost to the audit; and on a single server the
     * mirror, lacking the revision a later compare-and-set of that key names, stops
     * there (a clustered one goes on: NATS-FACTS §6). */
    /* Counted from the first message read, not the stream's first sequence: the oldest
     * messages may expire (max_age) between the two. */
    if (err == GF_OK)
        limit_dropped(r, mirror, si);
    int64_t since_ns = r->o->since_ms * 1000000;
    bool whole = since_ns == 0 || si->State.LastTime >= since_ns;
    uint64_t held = 0, seen = 0;
    if (err == GF_OK)
        err = read_ordered(r, mirror, si, 0, cu.last, fn, prefix, whole ? &held : NULL, &seen);
    if (err == GF_OK && held > 0 && held < cu.last - seen + 1)
        note(r,
             "%s lacks %llu of its revisions %llu to %llu (%s dropped them before the mirror "
             "copied them): not checked",
             mirror, (unsigned long long)(cu.last - seen + 1 - held), (unsigned long long)seen,
             (unsigned long long)cu.last, origin);
    jsStreamInfo_Destroy(si);
    if (err == GF_OK && cu.last < cu.want)
        err = read_tail(r, mirror, origin, &cu, fn, prefix);
    return err;
}

/* Matches not yet taken from the work queue MATCHES: their formation time. */
static gf_err read_matches(reader *r)
{
    jsStreamInfo *si = NULL;
    gf_err err = info(r, "MATCHES", &si);
    if (err != GF_OK)
        return err == GF_ERR_NOT_FOUND ? GF_OK : err;
    uint64_t first = si->State.FirstSeq, last = si->State.LastSeq, msgs = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    if (msgs == 0)
        return GF_OK;
    if (last - first > MATCHES_MAX_SPAN) {
        remark(r,
               "MATCHES holds %llu matches over %llu sequences: not read (the claims give "
               "their formation times)",
               (unsigned long long)msgs, (unsigned long long)(last - first + 1));
        return GF_OK;
    }
    for (uint64_t seq = first; seq <= last && err == GF_OK; seq++) {
        natsMsg *m = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_GetMsg(&m, r->js, "MATCHES", seq, NULL, &jerr);
        if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr)
            continue; /* allocated meanwhile */
        if (s != NATS_OK)
            return fail(r, s, "reading MATCHES seq %llu", (unsigned long long)seq);
        err = gf_check_match(r->c, (const uint8_t *)natsMsg_GetData(m),
                             (size_t)natsMsg_GetDataLength(m));
        natsMsg_Destroy(m);
    }
    return err;
}

/* ---- events ------------------------------------------------------------------------------ */

static gf_err on_event(reader *r, natsMsg *m, const jsMsgMetaData *meta, const char *prefix)
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

static gf_err on_dead_letter(reader *r, natsMsg *m, const jsMsgMetaData *meta, const char *prefix)
{
    if (strncmp(natsMsg_GetSubject(m), prefix, strlen(prefix)) != 0)
        return GF_OK;
    return gf_check_dead_letter(r->c, (const uint8_t *)natsMsg_GetData(m),
                                (size_t)natsMsg_GetDataLength(m));
}

static gf_err read_plain(reader *r, const char *stream, msg_fn fn, const char *prefix,
                         bool *missing)
{
    jsStreamInfo *si = NULL;
    gf_err err = info(r, stream, &si);
    *missing = err == GF_ERR_NOT_FOUND;
    if (err == GF_OK)
        err = read_ordered(r, stream, si, 0, si->State.LastSeq, fn, prefix, NULL, NULL);
    jsStreamInfo_Destroy(si);
    return *missing ? GF_OK : err;
}

/* Waits until every leaderboard consumer of EVENTS has nothing pending or in flight. */
static void settle(reader *r)
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
            note(r, "the leaderboard consumers still had %llu events to apply after %lld ms",
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
static gf_err page(reader *r, const char *board, uint64_t start,
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
static gf_err read_scores(reader *r)
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
                note(r, "no leaderboard answered %s (%s): scores not compared",
                     GF_WIRE_SUBJ_LEADERBOARD_QUERY, natsStatus_GetText(s));
                return GF_OK;
            }
            if (err != GF_OK) {
                note(r, "board %s: the leaderboard answered %s: not compared", board,
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

static gf_err read_events(reader *r)
{
    bool missing = false;
    gf_err err = read_plain(r, "EVENTS", on_event, "", &missing);
    if (err != GF_OK)
        return err;
    if (missing) {
        gf_check_missing(r->c, GF_CHECK_SRC_EVENTS, "stream EVENTS does not exist");
        note(r, "stream EVENTS does not exist");
        return GF_OK;
    }
    err = read_plain(r, "DLQ", on_dead_letter, GF_WIRE_SUBJ_DLQ ".EVENTS.", &missing);
    if (err == GF_OK && !r->o->no_scores)
        err = read_scores(r);
    return err;
}

gf_err gf_check_read(natsConnection *nc, jsCtx *js, gf_check *c, const gf_check_read_opts *o,
                     gf_check_read_notes *notes, char *why, size_t why_size)
{
    reader r = {nc, js, c, o, notes, why, why_size};
    memset(notes, 0, sizeof *notes);
    if (why_size)
        why[0] = 0;
    gf_err err = read_mirror(&r, "AUDIT_TICKETS", "tickets", on_ticket, GF_CHECK_SRC_TICKETS);
    if (err == GF_OK)
        err = read_mirror(&r, "AUDIT_MATCHES", "matches", on_outcome, GF_CHECK_SRC_MATCHES);
    if (err == GF_OK)
        err = read_mirror(&r, "AUDIT_PLAYERS", "players", on_player, GF_CHECK_SRC_PLAYERS);
    if (err == GF_OK)
        err = read_matches(&r);
    if (err == GF_OK && !o->no_events)
        err = read_events(&r);
    if (err == GF_ERR_NOMEM)
        snprintf(why, why_size, "out of memory");
    return err;
}
