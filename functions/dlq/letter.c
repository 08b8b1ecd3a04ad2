/* letter.c — advisories in, DeadLetters out, re-drive plans (letter.h). */
#include "letter.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gamefn/names.h"
#include "gamefn/utf8.h"
#include "gamefn/util.h"

static const gf_cfg_field fields[] = {
    {.key = "reasons_bucket",
     .type = GF_CFG_STRING,
     .offset = offsetof(dlq_config, reasons_bucket),
     .def = "dlq_reasons",
     .help = "KV bucket where consumers record why they dead-lettered a message"},
    {.key = "streams",
     .type = GF_CFG_STRING_LIST,
     .offset = offsetof(dlq_config, streams),
     .count_offset = offsetof(dlq_config, streams_len),
     .def = "[EVENTS, MATCHES, ADVISORIES]",
     .min = 1,
     .max = 64,
     .help = "streams whose consumers' dead letters are moved; advisories about any other "
             "stream are acked and skipped (counted)"},
};

static bool dlq_validate(const void *obj, gf_cfg_problem *p)
{
    const dlq_config *c = obj;
    for (size_t i = 0; i < c->streams_len; i++) {
        if (!gf_cfg_stream_ok(c->streams[i], "streams", p))
            return false;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(c->streams[j], c->streams[i]) == 0) {
                p->key = "streams";
                snprintf(p->text, sizeof p->text, "stream '%.64s' is listed twice", c->streams[i]);
                return false;
            }
        }
    }
    return gf_cfg_bucket_ok(c->reasons_bucket, "reasons_bucket", p);
}

const gf_cfg_table dlq_config_table = {
    .name = "dlq",
    .size = sizeof(dlq_config),
    .fields = fields,
    .nfields = sizeof fields / sizeof fields[0],
    .validate = dlq_validate,
};

bool dlq_stream_moved(const dlq_config *cfg, const char *stream)
{
    for (size_t i = 0; i < cfg->streams_len; i++)
        if (strcmp(cfg->streams[i], stream) == 0)
            return true;
    return false;
}

static gf_err bad(char *why, size_t size, const char *text)
{
    snprintf(why, size, "%s", text);
    return GF_ERR_INVALID;
}

static bool copy_name(json_t *root, const char *key, char *out, size_t size)
{
    const char *v = json_string_value(json_object_get(root, key));
    if (!v || !gf_name_asset_ok(v, NULL, 0) || strlen(v) >= size)
        return false;
    memcpy(out, v, strlen(v) + 1);
    return true;
}

gf_err dlq_advisory_parse(const char *json, size_t len, dlq_advisory *out, char *why,
                          size_t why_size)
{
    memset(out, 0, sizeof *out);
    json_t *root = json_loadb(json, len, 0, NULL);
    gf_err err = GF_OK;
    const char *type = json_string_value(json_object_get(root, "type"));
    json_t *seq = json_object_get(root, "stream_seq");
    json_t *deliveries = json_object_get(root, "deliveries");
    if (!root || !type)
        err = bad(why, why_size, "not a JSON advisory");
    else if (strcmp(type, "io.nats.jetstream.advisory.v1.max_deliver") == 0)
        out->reason = GAMEFN__V1__DEAD_LETTER_REASON__DEAD_LETTER_REASON_MAX_DELIVERIES;
    else if (strcmp(type, "io.nats.jetstream.advisory.v1.terminated") == 0)
        out->reason = GAMEFN__V1__DEAD_LETTER_REASON__DEAD_LETTER_REASON_TERMINATED;
    else
        err = bad(why, why_size, "not a max_deliver or terminated advisory");
    if (err == GF_OK && (!copy_name(root, "stream", out->stream, sizeof out->stream) ||
                         !copy_name(root, "consumer", out->consumer, sizeof out->consumer)))
        err = bad(why, why_size, "advisory without a valid stream or consumer name");
    if (err == GF_OK && (!json_is_integer(seq) || json_integer_value(seq) <= 0))
        err = bad(why, why_size, "advisory without a stream_seq");
    if (err == GF_OK) {
        out->stream_seq = (uint64_t)json_integer_value(seq);
        json_int_t d = json_is_integer(deliveries) ? json_integer_value(deliveries) : 0;
        out->deliveries = d > 0 ? (uint64_t)d : 0;
    }
    json_decref(root);
    return err;
}

void dlq_subject(const char *stream, const char *consumer, char *buf, size_t size)
{
    snprintf(buf, size, "gamefn.v1.dlq.%s.%s", stream, consumer);
}

void dlq_msg_id(const dlq_advisory *a, char *buf, size_t size)
{
    snprintf(buf, size, "dlq-%s-%s-%" PRIu64, a->stream, a->consumer, a->stream_seq);
}

void dlq_text_clean(const char *in, char *out, size_t size)
{
    size_t max = size - 1 < DLQ_TEXT_MAX ? size - 1 : DLQ_TEXT_MAX;
    size_t n = 0, len = in ? strlen(in) : 0;
    for (size_t i = 0; i < len && n < max;) {
        size_t c = gf_utf8_char_len(in + i, len - i);
        if (c == 0) { /* not UTF-8: '?' */
            out[n++] = '?';
            i++;
            continue;
        }
        if (n + c > max)
            break;
        if (c == 1 && ((unsigned char)in[i] < 0x20 || in[i] == 0x7f))
            out[n++] = ' ';
        else
            memcpy(out + n, in + i, c), n += c;
        i += c;
    }
    out[n] = '\0';
}

gf_err dlq_letter_build(const dlq_advisory *a, const dlq_original *o,
                        const Gamefn__V1__DeadReason *reason, int64_t now_unix_ms, uint8_t **out,
                        size_t *len)
{
    Gamefn__V1__DeadLetter dl = GAMEFN__V1__DEAD_LETTER__INIT;
    Gamefn__V1__DeadLetter__HeadersEntry entries[DLQ_HEADERS_MAX];
    Gamefn__V1__DeadLetter__HeadersEntry *ptrs[DLQ_HEADERS_MAX];
    char error[DLQ_TEXT_MAX + 1] = "";
    char stream[DLQ_NAME_MAX + 1], consumer[DLQ_NAME_MAX + 1], subject[1024] = "";
    snprintf(stream, sizeof stream, "%s", a->stream);
    snprintf(consumer, sizeof consumer, "%s", a->consumer);
    if (reason && reason->error)
        dlq_text_clean(reason->error, error, sizeof error);
    else if (!o->present)
        snprintf(error, sizeof error, "the original is no longer in stream %.180s", a->stream);
    dl.stream = stream;
    dl.consumer = consumer;
    dl.stream_seq = a->stream_seq;
    dl.reason = a->reason;
    dl.deliveries = a->deliveries;
    if (reason && reason->attempts > dl.deliveries)
        dl.deliveries = reason->attempts;
    dl.error = error;
    dl.dead_unix_ms = now_unix_ms;
    if (o->present) {
        snprintf(subject, sizeof subject, "%s", o->subject);
        dl.payload.data = (uint8_t *)(uintptr_t)o->data;
        dl.payload.len = o->len;
        dl.stored_unix_ms = o->stored_unix_ms;
        size_t n = o->nheaders < DLQ_HEADERS_MAX ? o->nheaders : DLQ_HEADERS_MAX;
        for (size_t i = 0; i < n; i++) {
            gamefn__v1__dead_letter__headers_entry__init(&entries[i]);
            entries[i].key = (char *)(uintptr_t)o->hkeys[i];
            entries[i].value = (char *)(uintptr_t)o->hvalues[i];
            ptrs[i] = &entries[i];
        }
        dl.n_headers = n;
        dl.headers = ptrs;
    }
    dl.subject = subject;
    return gf_pack(&dl.base, out, len);
}

static bool copied(const char *key)
{
    return strncasecmp(key, "Nats-", 5) != 0 && strcasecmp(key, "Gamefn-Redrive") != 0 &&
           strcasecmp(key, "Gamefn-Redrive-Of") != 0;
}

gf_err dlq_plan_redrive(const Gamefn__V1__DeadLetter *dl, uint64_t dlq_seq, uint64_t nonce,
                        dlq_plan *out)
{
    memset(out, 0, sizeof *out);
    if (!dl->subject || !dl->subject[0] || !gf_name_subject_ok(dl->subject, false, NULL, 0) ||
        !dl->consumer || !dl->consumer[0] || strlen(dl->subject) >= sizeof out->subject)
        return GF_ERR_INVALID;
    snprintf(out->subject, sizeof out->subject, "%s", dl->subject);
    snprintf(out->msg_id, sizeof out->msg_id, "redrive-%" PRIu64 "-%" PRIx64, dlq_seq, nonce);
    snprintf(out->redrive_of, sizeof out->redrive_of, "%" PRIu64, dlq_seq);
    for (size_t i = 0; i < dl->n_headers && out->nheaders < DLQ_HEADERS_MAX - 2; i++) {
        if (copied(dl->headers[i]->key)) {
            out->hkeys[out->nheaders] = dl->headers[i]->key;
            out->hvalues[out->nheaders++] = dl->headers[i]->value;
        }
    }
    out->hkeys[out->nheaders] = "Gamefn-Redrive";
    out->hvalues[out->nheaders++] = dl->consumer;
    out->hkeys[out->nheaders] = "Gamefn-Redrive-Of";
    out->hvalues[out->nheaders++] = out->redrive_of;
    return GF_OK;
}
