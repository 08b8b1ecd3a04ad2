/*
 * publish_reply.c — the pure half of the publisher (see publish_int.h): reading
 * JetStream's answers, deciding what they mean, checking what callers pass in.
 *
 * Design notes:
 * - A PubAck is parsed with jansson, not by nats.c: nats.c's own parser keeps only
 *   err_code and drops "code", and the code is what tells a retryable refusal apart:
 *   nats-server 2.9.10 answers a failed RAFT proposal (e.g. the leader lost its
 *   quorum) with {"error":{"code":503,"description":...}} and no err_code at all.
 * - Retryable: no responders (no stream leader listening: an election), any 503,
 *   10008 (JetStream temporarily unavailable) and 10009 (not the leader). None of
 *   these stored anything, so a resend cannot duplicate. Everything else the server
 *   refuses is final; 10071 and 10070 are the CAS refusals. So is 10077 ("maximum
 *   messages exceeded", "maximum bytes exceeded" of a stream with discard new: store
 *   failed), although nats-server 2.9.10 sends it with code 503: it stays refused
 *   until an operator changes the stream, and resending it until the give-up would
 *   only turn a definite "full" into an unknown outcome (the event producer stops
 *   and reports the full stream on it).
 * - A STREAM.MSG.GET answer carries the stored headers base64-encoded; they are
 *   decoded with libsodium and read for Nats-Msg-Id and KV-Operation only.
 */
#include "publish_int.h"

#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void gf__publish_reply_parse(const char *data, size_t len, bool no_responders, bool has_status,
                             gf__pub_reply *out)
{
    memset(out, 0, sizeof *out);
    out->answer = GF__PUB_GARBAGE;
    if (no_responders) {
        out->answer = GF__PUB_NO_RESPONDERS;
        return;
    }
    if (len == 0) {
        if (has_status)
            out->answer = GF__PUB_STATUS;
        return;
    }
    json_t *root = json_loadb(data, len, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return;
    }
    json_t *err = json_object_get(root, "error");
    if (json_is_object(err)) {
        json_t *code = json_object_get(err, "code");
        json_t *err_code = json_object_get(err, "err_code");
        out->answer = GF__PUB_API_ERROR;
        out->code = json_is_integer(code) ? (int)json_integer_value(code) : 0;
        out->err_code = json_is_integer(err_code) ? (int)json_integer_value(err_code) : 0;
    } else {
        json_t *seq = json_object_get(root, "seq");
        if (json_is_integer(seq) && json_integer_value(seq) > 0) {
            out->answer = GF__PUB_ACK;
            out->seq = (uint64_t)json_integer_value(seq);
            out->duplicate = json_is_true(json_object_get(root, "duplicate"));
        }
    }
    json_decref(root);
}

gf__pub_verdict gf__publish_verdict(const gf__pub_reply *r)
{
    switch (r->answer) {
    case GF__PUB_ACK:
        return GF__PUB_DONE;
    case GF__PUB_NO_RESPONDERS:
    case GF__PUB_STATUS:
        return GF__PUB_RETRY;
    case GF__PUB_API_ERROR:
        if (r->err_code == JSStreamWrongLastSequenceErr || r->err_code == JSStreamWrongLastMsgIDErr)
            return GF__PUB_CONFLICT;
        if (r->err_code == JSStreamStoreFailedErr)
            return GF__PUB_REFUSED;
        if (r->code == 503 || r->err_code == JSClusterNotAvailErr ||
            r->err_code == JSClusterNotLeaderErr)
            return GF__PUB_RETRY;
        return GF__PUB_REFUSED;
    case GF__PUB_GARBAGE:
        break;
    }
    return GF__PUB_REFUSED;
}

bool gf_publish_full(gf_err err, int js_code)
{
    return err == GF_ERR_NATS &&
           (js_code == JSStreamStoreFailedErr || js_code == JSAccountResourcesExceededErr);
}

/* "Key: Value" with the key compared ignoring case; value trimmed of spaces. */
static bool header_line(const char *line, size_t n, const char *key, const char **val,
                        size_t *val_len)
{
    size_t k = strlen(key);
    if (n <= k || line[k] != ':' || strncasecmp(line, key, k) != 0)
        return false;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *val = v;
    *val_len = (size_t)(end - v);
    return true;
}

gf_err gf__publish_hdrs_parse(const char *block, size_t len, gf__pub_stored *out)
{
    static const char magic[] = "NATS/1.0";
    out->has_msg_id = false;
    out->msg_id[0] = '\0';
    out->op = GF__PUB_KV_PUT;
    if (len < sizeof magic - 1 || memcmp(block, magic, sizeof magic - 1) != 0)
        return GF_ERR_INVALID;
    const char *p = memchr(block, '\n', len);
    if (!p)
        return GF_ERR_INVALID;
    const char *end = block + len;
    for (p++; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return GF_ERR_INVALID;
        size_t n = (size_t)(nl - p);
        if (n > 0 && p[n - 1] == '\r')
            n--;
        const char *v = NULL;
        size_t vn = 0;
        if (header_line(p, n, "Nats-Msg-Id", &v, &vn)) {
            if (vn == 0 || vn > GF_PUBLISH_MSG_ID_MAX)
                return GF_ERR_INVALID;
            memcpy(out->msg_id, v, vn);
            out->msg_id[vn] = '\0';
            out->has_msg_id = true;
        } else if (header_line(p, n, "KV-Operation", &v, &vn)) {
            if (vn == 3 && memcmp(v, "DEL", 3) == 0)
                out->op = GF__PUB_KV_DEL;
            else if (vn == 5 && memcmp(v, "PURGE", 5) == 0)
                out->op = GF__PUB_KV_PURGE;
        }
        p = nl + 1;
    }
    return GF_OK;
}

/* The "hdrs" member: base64 of a header block, absent when the message has none. */
static gf_err stored_headers(json_t *msg, gf__pub_stored *out)
{
    json_t *hdrs = json_object_get(msg, "hdrs");
    out->has_msg_id = false;
    out->op = GF__PUB_KV_PUT;
    if (!hdrs)
        return GF_OK;
    if (!json_is_string(hdrs))
        return GF_ERR_NATS;
    size_t b64_len = json_string_length(hdrs);
    size_t cap = b64_len / 4 * 3 + 3, bin_len = 0;
    char *bin = malloc(cap + 1);
    if (!bin)
        return GF_ERR_NOMEM;
    gf_err err = GF_ERR_NATS;
    if (sodium_base642bin((unsigned char *)bin, cap, json_string_value(hdrs), b64_len, NULL,
                          &bin_len, NULL, sodium_base64_VARIANT_ORIGINAL) == 0 &&
        gf__publish_hdrs_parse(bin, bin_len, out) == GF_OK)
        err = GF_OK;
    free(bin);
    return err;
}

gf_err gf__publish_stored_parse(const char *data, size_t len, gf__pub_stored *out)
{
    memset(out, 0, sizeof *out);
    json_t *root = json_loadb(data, len, 0, NULL);
    gf_err err = GF_ERR_NATS;
    if (!json_is_object(root))
        goto out;
    json_t *e = json_object_get(root, "error");
    if (json_is_object(e)) {
        gf__pub_reply r = {.answer = GF__PUB_API_ERROR};
        json_t *code = json_object_get(e, "code"), *err_code = json_object_get(e, "err_code");
        r.code = json_is_integer(code) ? (int)json_integer_value(code) : 0;
        r.err_code = json_is_integer(err_code) ? (int)json_integer_value(err_code) : 0;
        if (r.err_code == JSNoMessageFoundErr)
            err = GF_OK; /* found stays false */
        else if (gf__publish_verdict(&r) == GF__PUB_RETRY)
            err = GF_ERR_RETRY;
        goto out;
    }
    json_t *msg = json_object_get(root, "message");
    json_t *seq = json_object_get(msg, "seq");
    if (!json_is_object(msg) || !json_is_integer(seq) || json_integer_value(seq) <= 0)
        goto out;
    out->seq = (uint64_t)json_integer_value(seq);
    err = stored_headers(msg, out);
    out->found = err == GF_OK;
out:
    json_decref(root);
    return err;
}

bool gf__publish_msg_id_ok(const char *id)
{
    if (!id || !*id)
        return false;
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++, n++) {
        if (*p <= 0x20 || *p >= 0x7f || n >= GF_PUBLISH_MSG_ID_MAX)
            return false;
    }
    return true;
}

bool gf__publish_header_ok(const gf_publish_header *h, const char *const *reserved)
{
    if (!h->key || !*h->key || !h->value)
        return false;
    for (const unsigned char *p = (const unsigned char *)h->key; *p; p++) {
        if (*p <= 0x20 || *p >= 0x7f || *p == ':')
            return false;
    }
    for (const unsigned char *p = (const unsigned char *)h->value; *p; p++) {
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return false;
    }
    for (; reserved && *reserved; reserved++) {
        if (strcasecmp(h->key, *reserved) == 0)
            return false;
    }
    return true;
}

size_t gf__publish_header_bytes(const char *const *keys, const char *const *values, size_t n)
{
    size_t bytes = strlen("NATS/1.0\r\n") + strlen("\r\n");
    for (size_t i = 0; i < n; i++)
        bytes += strlen(keys[i]) + strlen(": ") + strlen(values[i]) + strlen("\r\n");
    return bytes;
}

int64_t gf__publish_backoff_ms(int64_t min_ms, int64_t max_ms, int failures, int jitter_pct)
{
    int64_t delay = min_ms;
    for (int i = 1; i < failures && delay < max_ms; i++)
        delay *= 2;
    if (delay > max_ms)
        delay = max_ms;
    if (jitter_pct < 0)
        jitter_pct = 0;
    if (jitter_pct > 100)
        jitter_pct = 100;
    return delay * (100 + jitter_pct) / 200;
}
