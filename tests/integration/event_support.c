/* event_support.c — see event_support.h. */
#include "event_support.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/effect_record.h"
#include "gamefn/partition.h"
#include "gamefn/util.h"
#include "gamefn/v1/event.pb-c.h"

const char gf_ev_mapping[] =
    "mappings {\n"
    "  \"gamefn.v1.event.*.*\": "
    "\"gamefn.v1.evp.{{partition(16,1)}}.{{wildcard(1)}}.{{wildcard(2)}}\"\n"
    "}\n";

const char gf_ev_stream[] = "    - name: EVENTS\n"
                            "      subjects: [\"gamefn.v1.evp.>\"]\n"
                            "      max_age: 7d\n"
                            "      duplicate_window: 10m\n";

static int pack_event(Gamefn__V1__GameEvent *ev, const char *source, uint64_t seq,
                      const char *player, const char *type, int64_t occurred, uint8_t **out,
                      size_t *len)
{
    char event_id[160], src[80], pid[80], typ[40];
    snprintf(event_id, sizeof event_id, "%s-%" PRIu64, source, seq);
    snprintf(src, sizeof src, "%s", source);
    snprintf(pid, sizeof pid, "%s", player);
    snprintf(typ, sizeof typ, "%s", type);
    ev->event_id = event_id;
    ev->source_id = src;
    ev->source_seq = seq;
    ev->player_id = pid;
    ev->event_type = typ;
    ev->occurred_unix_ms = occurred > 0 ? occurred : 1764547200000;
    return gf_pack(&ev->base, out, len) == GF_OK ? 0 : -1;
}

int gf_ev_score(const char *source, uint64_t seq, const char *player, int64_t delta,
                const char *board, int64_t occurred_unix_ms, uint8_t **out, size_t *len)
{
    char b[40];
    snprintf(b, sizeof b, "%s", board ? board : "");
    Gamefn__V1__ScoreEvent sc = GAMEFN__V1__SCORE_EVENT__INIT;
    sc.delta = delta;
    sc.board = b;
    Gamefn__V1__GameEvent ev = GAMEFN__V1__GAME_EVENT__INIT;
    ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE;
    ev.score = &sc;
    return pack_event(&ev, source, seq, player, "score", occurred_unix_ms, out, len);
}

int gf_ev_kill(const char *source, uint64_t seq, const char *player, uint8_t **out, size_t *len)
{
    char victim[] = "victim";
    Gamefn__V1__KillEvent k = GAMEFN__V1__KILL_EVENT__INIT;
    k.victim_player_id = victim;
    Gamefn__V1__GameEvent ev = GAMEFN__V1__GAME_EVENT__INIT;
    ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL;
    ev.kill = &k;
    return pack_event(&ev, source, seq, player, "kill", 0, out, len);
}

int gf_ev_publish(jsCtx *js, const char *player, const char *type, const uint8_t *data, size_t len,
                  const char *source, uint64_t seq, const char *msg_id, bool async)
{
    char subject[256], id[200], seqtext[24];
    snprintf(subject, sizeof subject, "gamefn.v1.event.%s.%s", player, type);
    if (msg_id)
        snprintf(id, sizeof id, "%s", msg_id);
    else
        snprintf(id, sizeof id, "%s-%" PRIu64, source, seq);
    snprintf(seqtext, sizeof seqtext, "%" PRIu64, seq);
    natsMsg *m = NULL;
    if (natsMsg_Create(&m, subject, NULL, (const char *)data, (int)len) != NATS_OK)
        return -1;
    natsMsgHeader_Set(m, "Nats-Msg-Id", id);
    natsMsgHeader_Set(m, "Gamefn-Source", source);
    natsMsgHeader_Set(m, "Gamefn-Source-Seq", seqtext);
    natsStatus s;
    if (async) {
        s = js_PublishMsgAsync(js, &m, NULL);
    } else {
        jsPubAck *ack = NULL;
        s = js_PublishMsg(&ack, js, m, NULL, NULL);
        jsPubAck_Destroy(ack);
    }
    natsMsg_Destroy(m);
    return s == NATS_OK ? 0 : -1;
}

int gf_ev_publish_raw(jsCtx *js, const char *subject, const void *data, size_t len,
                      const char *msg_id)
{
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = msg_id;
    jsPubAck *ack = NULL;
    natsStatus s = js_Publish(&ack, js, subject, data, (int)len, &po, NULL);
    jsPubAck_Destroy(ack);
    return s == NATS_OK ? 0 : -1;
}

int gf_ev_flush(jsCtx *js)
{
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 60000;
    return js_PublishAsyncComplete(js, &po) == NATS_OK ? 0 : -1;
}

jsCtx *gf_ev_js(natsConnection *nc)
{
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 10000;
    jo.PublishAsync.MaxPending = 2048;
    jo.PublishAsync.StallWait = 10000;
    jsCtx *js = NULL;
    return natsConnection_JetStream(&js, nc, &jo) == NATS_OK ? js : NULL;
}

int gf_ev_kv_get(jsCtx *js, const char *bucket, const char *key, void *buf, size_t size)
{
    kvStore *kv = NULL;
    kvEntry *e = NULL;
    int n = -1;
    if (js_KeyValue(&kv, js, bucket) == NATS_OK && kvStore_Get(&e, kv, key) == NATS_OK &&
        kvEntry_Operation(e) == kvOp_Put) {
        n = kvEntry_ValueLen(e);
        if ((size_t)n >= size)
            n = (int)size - 1;
        memcpy(buf, kvEntry_Value(e), (size_t)n);
        ((char *)buf)[n] = '\0';
    }
    kvEntry_Destroy(e);
    kvStore_Destroy(kv);
    return n;
}

int gf_ev_effect(jsCtx *js, const char *bucket, const char *key, char *buf, size_t size)
{
    static uint8_t raw[1 << 20];
    int n = gf_ev_kv_get(js, bucket, key, raw, sizeof raw);
    uint8_t *effect = NULL;
    size_t elen = 0;
    if (n < 0 || gf_effect_record_peek(raw, (size_t)n, NULL, &effect, &elen) != GF_OK)
        return -1;
    if (elen >= size)
        elen = size - 1;
    memcpy(buf, effect, elen);
    buf[elen] = '\0';
    free(effect);
    return (int)elen;
}

int gf_ev_sums(jsCtx *js, const char *player, char *buf, size_t size)
{
    int n = gf_ev_effect(js, "test_sums", player, buf, size);
    char *at = n < 0 ? NULL : strstr(buf, " @");
    if (!at)
        return n < 0 ? -1 : (int)strlen(buf);
    size_t skip = 2 + strspn(at + 2, "0123456789");
    memmove(at, at + skip, strlen(at + skip) + 1);
    return (int)strlen(buf);
}

unsigned gf_ev_partition(const char *player)
{
    return gf_partition_of(player, 16);
}
