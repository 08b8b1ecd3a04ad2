/*
 * poll.c — one look at every durable consumer (see poll.h).
 */
#include "poll.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/util.h"

/* "<a>: <b>", or "<a>/<c>: <b>" when c is set */
static void add_error(lag_poll_result *r, const char *a, const char *c, const char *b)
{
    if (r->errors_len >= LAG_POLL_ERRORS_MAX)
        return;
    char *out = r->errors[r->errors_len++];
    size_t size = sizeof r->errors[0];
    int n = snprintf(out, size, "%.120s%s%.120s: ", a, c ? "/" : "", c ? c : "");
    if (n > 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, "%s", b);
}

static gf_err add_name(char ***names, size_t *len, const char *name)
{
    char *copy = strdup(name);
    char **grown = copy ? realloc(*names, (*len + 1) * sizeof **names) : NULL;
    if (!grown) {
        free(copy);
        return GF_ERR_NOMEM;
    }
    *names = grown;
    grown[(*len)++] = copy;
    return GF_OK;
}

static void free_names(char **names, size_t len)
{
    for (size_t i = 0; i < len; i++)
        free(names[i]);
    free(names);
}

bool lag_poll_unreadable(const lag_poll_result *r, const char *stream)
{
    for (size_t i = 0; i < r->unreadable_len; i++)
        if (strcmp(r->unreadable[i], stream) == 0)
            return true;
    return false;
}

gf_err lag_poll_next_stored(natsConnection *nc, const char *stream, const char *filter,
                            uint64_t from_seq, uint64_t *seq, int64_t *unix_ms)
{
    char subject[320], body[700];
    snprintf(subject, sizeof subject, "$JS.API.STREAM.MSG.GET.%s", stream);
    snprintf(body, sizeof body, "{\"seq\":%llu,\"next_by_subj\":\"%s\"}",
             (unsigned long long)(from_seq ? from_seq : 1), filter && filter[0] ? filter : ">");
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_RequestString(&reply, nc, subject, body, 5000);
    if (s != NATS_OK)
        return gf_nats_err(s);
    json_error_t jerr;
    json_t *root =
        json_loadb(natsMsg_GetData(reply), (size_t)natsMsg_GetDataLength(reply), 0, &jerr);
    natsMsg_Destroy(reply);
    if (!root)
        return GF_ERR_NATS;
    gf_err err = GF_ERR_NATS;
    json_t *msg = json_object_get(root, "message");
    json_t *error = json_object_get(root, "error");
    const char *time = json_string_value(json_object_get(msg, "time"));
    int64_t ns = 0;
    if (msg && time && gf_clock_parse_rfc3339(time, &ns) == GF_OK) {
        *seq = (uint64_t)json_integer_value(json_object_get(msg, "seq"));
        *unix_ms = ns / 1000000;
        err = GF_OK;
    } else if (error && json_integer_value(json_object_get(error, "err_code")) == 10037) {
        err = GF_ERR_NOT_FOUND; /* JSNoMessageFoundErr */
    }
    json_decref(root);
    return err;
}

static int sample_cmp(const void *a, const void *b)
{
    const lag_sample *x = a, *y = b;
    int c = strcmp(x->stream, y->stream);
    return c ? c : strcmp(x->consumer, y->consumer);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static gf_err add_sample(lag_poll_result *r, const jsStreamInfo *si, const jsConsumerInfo *ci,
                         natsConnection *nc, int64_t now_ms)
{
    lag_sample *grown = gf_grow(r->samples, &r->cap, r->len + 1, sizeof *r->samples);
    if (!grown)
        return GF_ERR_NOMEM;
    r->samples = grown;
    lag_sample *s = &r->samples[r->len++];
    memset(s, 0, sizeof *s);
    snprintf(s->stream, sizeof s->stream, "%s", si->Config->Name);
    snprintf(s->consumer, sizeof s->consumer, "%s", ci->Name);
    if (ci->Config->FilterSubject)
        snprintf(s->filter, sizeof s->filter, "%s", ci->Config->FilterSubject);
    s->pending = ci->NumPending;
    s->ack_pending = (uint64_t)(ci->NumAckPending > 0 ? ci->NumAckPending : 0);
    s->redelivered = (uint64_t)(ci->NumRedelivered > 0 ? ci->NumRedelivered : 0);
    s->ack_floor = ci->AckFloor.Stream;
    s->in = (lag_input){
        .pending = s->pending,
        .ack_pending = s->ack_pending,
        .stream_last_seq = si->State.LastSeq,
        .stream_msgs = si->State.Msgs,
        .stream_bytes = si->State.Bytes,
        .max_age_ms = si->Config->MaxAge / 1000000,
        .max_msgs = si->Config->MaxMsgs > 0 ? si->Config->MaxMsgs : 0,
        .max_bytes = si->Config->MaxBytes > 0 ? si->Config->MaxBytes : 0,
    };
    if (s->pending + s->ack_pending > 0) {
        uint64_t seq = 0;
        int64_t stored = 0;
        gf_err err =
            lag_poll_next_stored(nc, s->stream, s->filter, s->ack_floor + 1, &seq, &stored);
        if (err == GF_OK) {
            s->in.oldest_seq = seq;
            s->oldest_unix_ms = stored;
            s->in.oldest_age_ms = now_ms > stored ? now_ms - stored : 0;
        } else if (err != GF_ERR_NOT_FOUND) {
            add_error(r, s->stream, s->consumer, "oldest unacked event unreadable");
        }
    }
    return GF_OK;
}

static gf_err poll_stream(natsConnection *nc, jsCtx *js, const char *name, bool listed,
                          lag_poll_result *r)
{
    jsStreamInfo *si = NULL;
    jsConsumerInfoList *list = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, js, name, NULL, &jerr);
    if (s == NATS_NOT_FOUND) {
        /* gone (its consumers with it); a listed one was removed since the listing */
        if (!listed)
            add_error(r, name, NULL, "stream not found");
        return GF_OK;
    }
    if (s != NATS_OK) {
        add_error(r, name, NULL, natsStatus_GetText(s));
        return add_name(&r->unreadable, &r->unreadable_len, name) == GF_OK ? gf_nats_err(s)
                                                                           : GF_ERR_NOMEM;
    }
    gf_err err = add_name(&r->streams, &r->streams_len, name);
    if (err != GF_OK)
        goto out;
    s = js_Consumers(&list, js, name, NULL, &jerr);
    if (s == NATS_NOT_FOUND)
        goto out; /* no consumers */
    if (s != NATS_OK) {
        add_error(r, name, NULL, "consumers unreadable");
        err = add_name(&r->unreadable, &r->unreadable_len, name);
        goto out;
    }
    int64_t now = gf_clock_unix_ms();
    for (int i = 0; i < list->Count && err == GF_OK; i++) {
        const jsConsumerInfo *ci = list->List[i];
        if (ci && ci->Config && ci->Config->Durable && ci->Config->Durable[0])
            err = add_sample(r, si, ci, nc, now);
    }
out:
    jsConsumerInfoList_Destroy(list);
    jsStreamInfo_Destroy(si);
    return err;
}

gf_err lag_poll(natsConnection *nc, jsCtx *js, const char *const *streams, size_t n,
                lag_poll_result *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    out->started_unix_ms = gf_clock_unix_ms();
    int64_t t0 = gf_clock_mono_ms();
    jsStreamNamesList *names = NULL;
    gf_err err = GF_OK;
    if (n == 0) {
        jsErrCode jerr = 0;
        natsStatus s = js_StreamNames(&names, js, NULL, &jerr);
        if (s != NATS_OK && s != NATS_NOT_FOUND) {
            snprintf(why, why_size, "cannot list streams: %s", natsStatus_GetText(s));
            return gf_nats_err(s);
        }
    }
    size_t count = n ? n : (names ? (size_t)names->Count : 0);
    for (size_t i = 0; i < count && err == GF_OK; i++) {
        const char *name = n ? streams[i] : names->List[i];
        err = poll_stream(nc, js, name, n == 0, out);
        if (err != GF_ERR_NOMEM)
            err = GF_OK; /* recorded as an error line and an unreadable stream; go on */
    }
    jsStreamNamesList_Destroy(names);
    if (err != GF_OK) {
        snprintf(why, why_size, "out of memory");
        lag_poll_free(out);
        return err;
    }
    if (out->len > 1)
        qsort(out->samples, out->len, sizeof *out->samples, sample_cmp);
    if (out->streams_len > 1)
        qsort(out->streams, out->streams_len, sizeof *out->streams, name_cmp);
    out->took_ms = gf_clock_mono_ms() - t0;
    return GF_OK;
}

void lag_poll_free(lag_poll_result *r)
{
    if (!r)
        return;
    free(r->samples);
    free_names(r->streams, r->streams_len);
    free_names(r->unreadable, r->unreadable_len);
    memset(r, 0, sizeof *r);
}

void lag_sample_fill(Gamefn__V1__ConsumerLag *c, const lag_sample *s, const lag_verdict *v)
{
    gamefn__v1__consumer_lag__init(c);
    c->stream = (char *)(uintptr_t)s->stream;
    c->consumer = (char *)(uintptr_t)s->consumer;
    c->filter_subject = (char *)(uintptr_t)s->filter;
    c->pending = s->pending;
    c->ack_pending = s->ack_pending;
    c->redelivered = s->redelivered;
    c->lag = v->lag;
    c->ack_floor_stream_seq = s->ack_floor;
    c->oldest_unacked_seq = s->in.oldest_seq;
    c->oldest_unacked_unix_ms = s->oldest_unix_ms;
    c->oldest_unacked_age_ms = s->in.oldest_seq ? s->in.oldest_age_ms : 0;
    c->max_age_ms = s->in.max_age_ms;
    c->max_msgs = s->in.max_msgs;
    c->max_bytes = s->in.max_bytes;
    c->behind_msgs = v->behind_msgs;
    c->computed = (Gamefn__V1__LagLevel)v->level;
    c->level = c->computed;
    c->reason = (char *)(uintptr_t)v->reason;
}
