/*
 * check_read_mirror.c — the matchmaking audit of a live deployment (check_read_int.h): the
 * AUDIT_TICKETS, AUDIT_MATCHES and AUDIT_PLAYERS mirrors as revisions of their buckets,
 * and what is left in the work queue MATCHES.
 *
 * Design notes:
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
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "check_read_int.h"
#include "gamefn/clock.h"

enum { MATCHES_MAX_SPAN = 20000 };

/* ---- the AUDIT_* mirrors ---------------------------------------------------------------- */

static gf_err kv_record(ck_reader *r, natsMsg *m, const jsMsgMetaData *meta, const char *prefix,
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

static gf_err on_ticket(ck_reader *r, natsMsg *m, const jsMsgMetaData *meta, const char *prefix)
{
    return kv_record(r, m, meta, prefix, gf_check_ticket);
}

static gf_err on_outcome(ck_reader *r, natsMsg *m, const jsMsgMetaData *meta, const char *prefix)
{
    return kv_record(r, m, meta, prefix, gf_check_outcome);
}

static gf_err on_player(ck_reader *r, natsMsg *m, const jsMsgMetaData *meta, const char *prefix)
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
static gf_err shift_probe(ck_reader *r, const char *mirror, const char *origin, const char *prefix,
                          uint64_t from, uint64_t last, uint64_t *compared, shift *sh)
{
    json_t *oroot = NULL, *om = NULL, *mroot = NULL, *mm = NULL;
    *compared = 0;
    gf_err err = ck_read_msg_get(r, origin, from, true, &oroot, &om);
    if (err == GF_OK && om && ck_read_msg_seq(om) <= last) {
        *compared = ck_read_msg_seq(om);
        err = ck_read_msg_get(r, mirror, *compared, false, &mroot, &mm);
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
static gf_err shift_find(ck_reader *r, const char *mirror, const char *origin, const char *prefix,
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
static gf_err shifted(ck_reader *r, const char *mirror, const char *origin, const char *prefix,
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
static gf_err caught_up(ck_reader *r, const char *mirror, const char *origin, const char *prefix,
                        jsStreamInfo **si, catch_up *cu)
{
    enum { SHIFT_RECHECK_MS = 2000 };
    jsStreamInfo *o = NULL;
    gf_err err = ck_read_info(r, origin, &o);
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
        err = ck_read_info(r, mirror, si);
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
        ck_read_progress(r, label, cu->last, cu->want, &shown);
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
static gf_err read_tail(ck_reader *r, const char *mirror, const char *origin, const catch_up *cu,
                        ck_read_msg_fn fn, const char *prefix)
{
    jsStreamInfo *o = NULL;
    uint64_t got = 0, seen = 0, lacking = cu->want - cu->last;
    gf_err err = ck_read_info(r, origin, &o);
    if (err == GF_OK)
        err = ck_read_ordered(r, origin, o, cu->last + 1, cu->want, fn, prefix, &got, &seen);
    jsStreamInfo_Destroy(o);
    if (err != GF_OK && err != GF_ERR_NOT_FOUND)
        return err;
    char active[64] = "";
    if (cu->active_ms >= 0)
        snprintf(active, sizeof active, ", its consumer last heard %lld ms ago",
                 (long long)cu->active_ms);
    if (got < lacking)
        ck_read_note(
            r,
            "%s stopped at revision %llu (no new revision for %lld ms%s); %s holds %llu of "
            "the %llu after it, read from there; the other %llu are gone: not checked",
            mirror, (unsigned long long)cu->last, (long long)cu->idle_ms, active, origin,
            (unsigned long long)got, (unsigned long long)lacking,
            (unsigned long long)(lacking - got));
    else
        ck_read_remark(
            r,
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
static void limit_dropped(ck_reader *r, const char *mirror, const jsStreamInfo *si)
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
    ck_read_note(
        r,
        "%s starts at revision %llu, younger than its max_age: its size limit (max_msgs "
        "%lld, max_bytes %lld) dropped the revisions before it, and what they named is not "
        "checked (an audit mirror needs no size limit: docs/OPERATIONS.md, Storage full)",
        mirror, (unsigned long long)si->State.FirstSeq, (long long)c->MaxMsgs,
        (long long)c->MaxBytes);
}

static gf_err read_mirror(ck_reader *r, const char *mirror, const char *bucket, ck_read_msg_fn fn,
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
        ck_read_note(r, "%s", why);
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
        ck_read_note(
            r,
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
        err = ck_read_ordered(r, mirror, si, 0, cu.last, fn, prefix, whole ? &held : NULL, &seen);
    if (err == GF_OK && held > 0 && held < cu.last - seen + 1)
        ck_read_note(
            r,
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
static gf_err read_matches(ck_reader *r)
{
    jsStreamInfo *si = NULL;
    gf_err err = ck_read_info(r, "MATCHES", &si);
    if (err != GF_OK)
        return err == GF_ERR_NOT_FOUND ? GF_OK : err;
    uint64_t first = si->State.FirstSeq, last = si->State.LastSeq, msgs = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    if (msgs == 0)
        return GF_OK;
    if (last - first > MATCHES_MAX_SPAN) {
        ck_read_remark(r,
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
            return ck_read_fail(r, s, "reading MATCHES seq %llu", (unsigned long long)seq);
        err = gf_check_match(r->c, (const uint8_t *)natsMsg_GetData(m),
                             (size_t)natsMsg_GetDataLength(m));
        natsMsg_Destroy(m);
    }
    return err;
}

gf_err ck_read_audit(ck_reader *r)
{
    gf_err err = read_mirror(r, "AUDIT_TICKETS", "tickets", on_ticket, GF_CHECK_SRC_TICKETS);
    if (err == GF_OK)
        err = read_mirror(r, "AUDIT_MATCHES", "matches", on_outcome, GF_CHECK_SRC_MATCHES);
    if (err == GF_OK)
        err = read_mirror(r, "AUDIT_PLAYERS", "players", on_player, GF_CHECK_SRC_PLAYERS);
    if (err == GF_OK)
        err = read_matches(r);
    return err;
}
