/*
 * producer_check.c — reading EVENTS back for the producer's tests (see
 * producer_check.h). A durable pull consumer without acks reads the stream from the
 * start until it has read as many messages as the stream holds.
 */
#include "producer_check.h"

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/event_check.h"
#include "harness_util.h"

const char pcx_mapping[] = GF_NATSD_EVENT_MAPPING;

void pcx_add_events(jsCtx *js, int replicas, int64_t max_msgs)
{
    static const char *subjects[] = {"gamefn.v1.evp.>"};
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "EVENTS";
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Replicas = replicas;
    sc.Duplicates = INT64_C(600000000000); /* 10 min, as config/gamefn.yaml */
    if (max_msgs > 0) {
        sc.MaxMsgs = max_msgs;
        sc.Discard = js_DiscardNew;
    }
    natsStatus s = NATS_ERR;
    jsErrCode jerr = 0;
    for (int64_t until = gf_clock_mono_ms() + 20000; gf_clock_mono_ms() < until;) {
        if ((s = js_AddStream(NULL, js, &sc, NULL, &jerr)) == NATS_OK)
            return;
        nats_Sleep(200);
    }
    fail_msg("add stream EVENTS: %s (%d)", nats_GetLastError(NULL), (int)jerr);
}

static pcx_source *source_of(pcx_stored *s, const char *id)
{
    for (size_t i = 0; i < s->nsources; i++)
        if (strcmp(s->sources[i].id, id) == 0)
            return &s->sources[i];
    pcx_source *grown = realloc(s->sources, (s->nsources + 1) * sizeof *grown);
    assert_non_null(grown);
    s->sources = grown;
    pcx_source *src = &s->sources[s->nsources++];
    memset(src, 0, sizeof *src);
    snprintf(src->id, sizeof src->id, "%s", id);
    return src;
}

static void count_seq(pcx_source *src, uint64_t seq)
{
    if (seq >= src->cap) {
        uint64_t cap = src->cap ? src->cap : 1024;
        while (cap <= seq)
            cap *= 2;
        uint8_t *c = realloc(src->count, cap);
        assert_non_null(c);
        memset(c + src->cap, 0, cap - src->cap);
        src->count = c;
        src->cap = cap;
    }
    if (src->count[seq] < 255)
        src->count[seq]++;
    if (seq > src->max_seq)
        src->max_seq = seq;
}

static const char *header(natsMsg *m, const char *key)
{
    const char *v = NULL;
    return natsMsgHeader_Get(m, key, &v) == NATS_OK ? v : "";
}

/* One stored message: valid, consistent, counted. */
static void check_one(pcx_stored *s, natsMsg *m)
{
    Gamefn__V1__GameEvent *ev = NULL;
    gf_event_problem why;
    const uint8_t *data = (const uint8_t *)natsMsg_GetData(m);
    if (gf_event_decode(data, (size_t)natsMsg_GetDataLength(m), &ev, &why) != GF_OK)
        fail_msg("stored event on %s does not validate: %s: %s", natsMsg_GetSubject(m), why.field,
                 why.why);
    if (gf_event_check_subject(natsMsg_GetSubject(m), ev, &why) != GF_OK)
        fail_msg("stored event %s: %s", ev->event_id, why.why);
    char seq[24];
    snprintf(seq, sizeof seq, "%" PRIu64, ev->source_seq);
    if (strcmp(header(m, "Nats-Msg-Id"), ev->event_id) != 0 ||
        strcmp(header(m, "Gamefn-Source"), ev->source_id) != 0 ||
        strcmp(header(m, "Gamefn-Source-Seq"), seq) != 0)
        fail_msg("headers of %s disagree with its body: Nats-Msg-Id=%s Gamefn-Source=%s "
                 "Gamefn-Source-Seq=%s",
                 ev->event_id, header(m, "Nats-Msg-Id"), header(m, "Gamefn-Source"),
                 header(m, "Gamefn-Source-Seq"));
    char want_id[100];
    snprintf(want_id, sizeof want_id, "%s-%s", ev->source_id, seq);
    assert_string_equal(ev->event_id, want_id);
    count_seq(source_of(s, ev->source_id), ev->source_seq);
    gamefn__v1__game_event__free_unpacked(ev, NULL);
}

void pcx_read(jsCtx *js, const char *stream, pcx_stored *out)
{
    memset(out, 0, sizeof *out);
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = NATS_ERR;
    for (int64_t until = gf_clock_mono_ms() + 20000; gf_clock_mono_ms() < until;) {
        if ((s = js_GetStreamInfo(&si, js, stream, NULL, &jerr)) == NATS_OK)
            break;
        nats_Sleep(200);
    }
    assert_int_equal(s, NATS_OK);
    uint64_t expect = si->State.Msgs;
    jsStreamInfo_Destroy(si);

    char durable[64];
    snprintf(durable, sizeof durable, "pcx%lld", (long long)gf_clock_mono_ns());
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = durable;
    cc.AckPolicy = js_AckNone;
    cc.DeliverPolicy = js_DeliverAll;
    natsSubscription *sub = th_pull_consumer(js, stream, &cc);
    int empty = 0;
    while (out->messages < expect && empty < 10) {
        natsMsgList list = {0};
        if (natsSubscription_Fetch(&list, sub, 1000, 2000, &jerr) != NATS_OK) {
            empty++;
            continue;
        }
        for (int i = 0; i < list.Count; i++)
            check_one(out, list.Msgs[i]);
        out->messages += (uint64_t)list.Count;
        natsMsgList_Destroy(&list);
    }
    natsSubscription_Destroy(sub);
    js_DeleteConsumer(js, stream, durable, NULL, NULL);
    if (out->messages != expect)
        fail_msg("read %" PRIu64 " of the %" PRIu64 " messages of %s", out->messages, expect,
                 stream);
}

void pcx_free(pcx_stored *s)
{
    for (size_t i = 0; i < s->nsources; i++)
        free(s->sources[i].count);
    free(s->sources);
    memset(s, 0, sizeof *s);
}

void pcx_expect(const pcx_stored *s, const char *source, uint64_t first, uint64_t last,
                const uint64_t *absent, size_t nabsent)
{
    const pcx_source *src = NULL;
    size_t len = strlen(source);
    for (size_t i = 0; i < s->nsources; i++) {
        const char *id = s->sources[i].id;
        bool incarnation = strncmp(id, source, len) == 0 && id[len] == '-' &&
                           strlen(id + len) == 9 && strspn(id + len + 1, "0123456789abcdef") == 8;
        if (strcmp(id, source) != 0 && !incarnation)
            continue;
        if (src != NULL)
            fail_msg("two sources match %s: %s and %s", source, src->id, id);
        src = &s->sources[i];
    }
    if (src == NULL)
        fail_msg("no event of source %s stored", source);
    uint64_t missing = 0, twice = 0, first_bad = 0;
    size_t a = 0;
    for (uint64_t seq = first; seq <= last; seq++) {
        unsigned n = seq < src->cap ? src->count[seq] : 0;
        bool want_absent = a < nabsent && absent[a] == seq;
        a += want_absent;
        unsigned want = want_absent ? 0 : 1;
        if (n != want && first_bad == 0)
            first_bad = seq;
        missing += n < want;
        twice += n > want;
    }
    if (missing || twice || src->max_seq > last)
        fail_msg("source %s: %" PRIu64 " seqs missing, %" PRIu64
                 " stored more often than once (or absent ones stored), first at seq %" PRIu64
                 "; highest stored %" PRIu64 ", want %" PRIu64,
                 source, missing, twice, first_bad, src->max_seq, last);
}
