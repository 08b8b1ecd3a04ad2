/*
 * dlq — the dead-letter mover. A pull endpoint on the durable consumer ADVISORIES/dlq:
 * for every max-deliveries or terminated advisory about a stream of functions.dlq.streams
 * (any consumer on it) it fetches the original message by its stream sequence, reads the
 * reason its consumer recorded (a DeadReason in `dlq_reasons`, key
 * <stream>.<consumer>.<seq>; the consumer framework writes one before it terminates a
 * message), and publishes a DeadLetter to
 * gamefn.v1.dlq.<stream>.<consumer> with Nats-Msg-Id dlq-<stream>-<consumer>-<seq>
 * (letter.h). It acks the advisory once the DLQ stored the letter; any failure to
 * reach a stream is retried (the advisory is redelivered), a malformed advisory is
 * terminated. Replicas share the consumer; the Msg-Id keeps a letter single.
 *
 * Advisories about other streams are acked, logged and counted, never moved: the server
 * emits them for every consumer of the account (an operator's own, a KV follower), and
 * their messages are not gamefn's to copy into DLQ (nor, by `gamefn dlq redrive`, back).
 *
 * Threads: advisories are handled concurrently (runtime.max_in_flight); they share
 * the publisher and the reasons kvStore, both thread-safe.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/function.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "gamefn/names.h"
#include "gamefn/publish.h"
#include "letter.h"

typedef struct mover {
    const dlq_config *cfg;
    gf_publish *pub;
    kvStore *reasons;
    atomic_llong moved, skipped; /* logged as they change and when the mover stops */
} mover;

/* The consumer's recorded reason, or NULL; GF_ERR_RETRY if the bucket did not answer. */
static gf_err read_reason(mover *mv, const dlq_advisory *a, Gamefn__V1__DeadReason **out)
{
    char key[600];
    kvEntry *e = NULL;
    *out = NULL;
    snprintf(key, sizeof key, "%s.%s.%" PRIu64, a->stream, a->consumer, a->stream_seq);
    if (!gf_name_kv_key_ok(key, NULL, 0))
        return GF_OK; /* names no KV key can hold: nobody recorded one */
    gf_err err = gf_kv_get(mv->reasons, key, &e);
    if (err == GF_OK) {
        *out = gamefn__v1__dead_reason__unpack(NULL, (size_t)kvEntry_ValueLen(e),
                                               (const uint8_t *)kvEntry_Value(e));
        if (!*out)
            gf_log_warn("unreadable dead-letter reason ignored", "key=%s", key);
    }
    kvEntry_Destroy(e);
    return err == GF_OK || err == GF_ERR_NOT_FOUND ? GF_OK : GF_ERR_RETRY;
}

/* The original's headers, first value of each. */
static void headers_of(natsMsg *m, dlq_original *o, const char **keys, const char **values)
{
    const char **all = NULL;
    int n = 0;
    if (natsMsgHeader_Keys(m, &all, &n) != NATS_OK)
        return;
    for (int i = 0; i < n && o->nheaders < DLQ_HEADERS_MAX; i++) {
        const char *v = NULL;
        if (natsMsgHeader_Get(m, all[i], &v) == NATS_OK) {
            keys[o->nheaders] = all[i];
            values[o->nheaders++] = v ? v : "";
        }
    }
    free((void *)all); /* the array only: the strings belong to the message */
}

static gf_err move(gf_fn *fn, mover *mv, const dlq_advisory *a)
{
    natsMsg *orig = NULL;
    jsErrCode jerr = 0;
    dlq_original o = {0};
    const char *keys[DLQ_HEADERS_MAX], *values[DLQ_HEADERS_MAX];
    natsStatus s = js_GetMsg(&orig, gf_fn_js(fn), a->stream, a->stream_seq, NULL, &jerr);
    if (s == NATS_OK) {
        o.present = true;
        o.subject = natsMsg_GetSubject(orig);
        o.data = (const uint8_t *)natsMsg_GetData(orig);
        o.len = (size_t)natsMsg_GetDataLength(orig);
        o.stored_unix_ms = natsMsg_GetTime(orig) / 1000000;
        o.hkeys = keys;
        o.hvalues = values;
        headers_of(orig, &o, keys, values);
    } else if (!(s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr ||
                 jerr == JSStreamNotFoundErr)) {
        gf_log_warn("cannot fetch a dead-lettered message: retrying",
                    "stream=%s seq=%" PRIu64 " status=%d js_code=%d", a->stream, a->stream_seq,
                    (int)s, (int)jerr);
        return GF_ERR_RETRY;
    }
    Gamefn__V1__DeadReason *reason = NULL;
    gf_err err = read_reason(mv, a, &reason);
    uint8_t *letter = NULL;
    size_t len = 0;
    if (err == GF_OK)
        err = dlq_letter_build(a, &o, reason, gf_clock_unix_ms(), &letter, &len);
    if (err == GF_OK) {
        char subject[600], id[600];
        dlq_subject(a->stream, a->consumer, subject, sizeof subject);
        dlq_msg_id(a, id, sizeof id);
        gf_publish_msg m = {.subject = subject, .msg_id = id, .data = letter, .len = len};
        gf_publish_result res;
        err = gf_publish_send_sync(mv->pub, &m, &res);
        if (err == GF_OK)
            gf_log_info("dead letter moved",
                        "stream=%s consumer=%s seq=%" PRIu64 " dlq_seq=%" PRIu64
                        " duplicate=%d error=\"%s\" moved_total=%lld",
                        a->stream, a->consumer, a->stream_seq, res.seq, (int)res.duplicate,
                        reason && reason->error ? reason->error : "",
                        atomic_fetch_add(&mv->moved, 1) + 1);
        else
            err = err == GF_ERR_INVALID ? GF_ERR_PERMANENT : GF_ERR_RETRY;
    }
    free(letter);
    if (reason)
        gamefn__v1__dead_reason__free_unpacked(reason, NULL);
    natsMsg_Destroy(orig);
    return err;
}

static gf_err on_advisory(gf_fn *fn, const gf_msg *msg)
{
    dlq_advisory a;
    char why[128];
    if (dlq_advisory_parse((const char *)msg->data, msg->len, &a, why, sizeof why) != GF_OK) {
        gf_log_warn("advisory ignored", "subject=%s why=\"%s\"", msg->subject, why);
        return GF_ERR_INVALID; /* terminated: it will never parse */
    }
    mover *mv = gf_fn_state(fn);
    if (!dlq_stream_moved(mv->cfg, a.stream)) {
        gf_log_info("advisory skipped: its stream is not in functions.dlq.streams",
                    "stream=%s consumer=%s seq=%" PRIu64 " skipped_total=%lld", a.stream,
                    a.consumer, a.stream_seq, atomic_fetch_add(&mv->skipped, 1) + 1);
        return GF_OK; /* acked: redelivering it would never change the answer */
    }
    return move(fn, mv, &a);
}

static gf_err init(gf_fn *fn)
{
    const dlq_config *cfg = gf_fn_section(fn);
    mover *mv = calloc(1, sizeof *mv);
    if (!mv)
        return GF_ERR_NOMEM;
    mv->cfg = cfg;
    gf_fn_set_state(fn, mv);
    gf_err err = gf_kv_open(gf_fn_js(fn), cfg->reasons_bucket, &mv->reasons);
    if (err != GF_OK) {
        gf_log_error("reasons bucket missing", "bucket=%s", cfg->reasons_bucket);
        return err;
    }
    return gf_publish_open(gf_fn_nats(fn), NULL, &mv->pub);
}

static void fini(gf_fn *fn)
{
    mover *mv = gf_fn_state(fn);
    if (!mv)
        return;
    gf_log_info("dead-letter mover stopped", "moved_total=%lld skipped_total=%lld",
                atomic_load(&mv->moved), atomic_load(&mv->skipped));
    gf_publish_close(mv->pub, 5000);
    kvStore_Destroy(mv->reasons);
    free(mv);
}

static const gf_endpoint endpoints[] = {
    {.name = "advisories",
     .kind = GF_ENDPOINT_PULL,
     .pull = {.stream = "ADVISORIES", .consumer = "dlq", .on_message = on_advisory}},
};

static const char *const streams[] = {"DLQ", NULL};
static const char *const buckets[] = {"dlq_reasons", NULL};

static const gf_function dlq_function = {
    .name = "dlq",
    .version = GAMEFN_RELEASE, /* the release: functions/CMakeLists.txt */
    .description = "Moves dead-lettered messages (max-deliveries and terminated advisories) to "
                   "stream DLQ with their reason.",
    .config = &dlq_config_table,
    .endpoints = endpoints,
    .endpoints_len = sizeof endpoints / sizeof endpoints[0],
    .streams = streams,
    .buckets = buckets,
    .init = init,
    .fini = fini,
};

int main(int argc, char **argv)
{
    return gf_function_main(&dlq_function, argc, argv);
}
