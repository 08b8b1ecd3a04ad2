/*
 * crashes_query.c — keys, request validation, top and detail replies (see crashes.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crashes.h"
#include "gamefn/util.h"

gf_err cr_key_format(const char *fingerprint, unsigned partition, char *buf, size_t size)
{
    cr_group probe;
    if (partition > 99 || cr_group_init(&probe, fingerprint) != GF_OK)
        return GF_ERR_INVALID;
    int n = snprintf(buf, size, "%s.p%02u", fingerprint, partition);
    return n > 0 && (size_t)n < size ? GF_OK : GF_ERR_INVALID;
}

gf_err cr_key_parse(const char *key, char *fp, unsigned *partition)
{
    cr_group probe;
    if (!key || strlen(key) != GF_FINGERPRINT_HEX_LEN + 4 ||
        strncmp(key + GF_FINGERPRINT_HEX_LEN, ".p", 2) != 0)
        return GF_ERR_INVALID;
    const char *p = key + GF_FINGERPRINT_HEX_LEN + 2;
    if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9')
        return GF_ERR_INVALID;
    char hex[GF_FINGERPRINT_HEX_LEN + 1];
    memcpy(hex, key, GF_FINGERPRINT_HEX_LEN);
    hex[GF_FINGERPRINT_HEX_LEN] = '\0';
    if (cr_group_init(&probe, hex) != GF_OK)
        return GF_ERR_INVALID;
    memcpy(fp, hex, sizeof hex);
    *partition = (unsigned)((p[0] - '0') * 10 + (p[1] - '0'));
    return GF_OK;
}

const char *cr_utf8_cut(const char *s, size_t max, char *buf)
{
    size_t n = strlen(s);
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--; /* s[n] continues a character: cut before its first byte */
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    return buf;
}

gf_err cr_request_parse(const uint8_t *data, size_t len, cr_request *out, char *field,
                        size_t field_size, char *why, size_t why_size)
{
    field[0] = '\0';
    memset(out, 0, sizeof *out);
    Gamefn__V1__CrashesQueryRequest *q = gamefn__v1__crashes_query_request__unpack(NULL, len, data);
    if (!q) {
        snprintf(why, why_size, "not a CrashesQueryRequest");
        return GF_ERR_INVALID;
    }
    const char *bad = NULL, *text = NULL;
    cr_group probe;
    switch (q->query_case) {
    case GAMEFN__V1__CRASHES_QUERY_REQUEST__QUERY_TOP:
        out->kind = CR_QUERY_TOP;
        out->limit = q->top->limit;
        out->since_unix_ms = q->top->since_unix_ms;
        if (q->top->limit < 1 || q->top->limit > CR_TOP_MAX) {
            bad = "top.limit";
            text = "must be 1..100";
        } else if (q->top->since_unix_ms < 0) {
            bad = "top.since_unix_ms";
            text = "must be >= 0";
        }
        break;
    case GAMEFN__V1__CRASHES_QUERY_REQUEST__QUERY_DETAIL:
        out->kind = CR_QUERY_DETAIL;
        if (cr_group_init(&probe, q->detail->fingerprint) != GF_OK) {
            bad = "detail.fingerprint";
            text = "must be 32 lowercase hex digits";
        } else {
            memcpy(out->fingerprint, q->detail->fingerprint, sizeof out->fingerprint);
        }
        break;
    default:
        bad = "query";
        text = "one of top or detail is required";
        break;
    }
    gamefn__v1__crashes_query_request__free_unpacked(q, NULL);
    if (!bad)
        return GF_OK;
    snprintf(field, field_size, "%s", bad);
    snprintf(why, why_size, "%s", text);
    return GF_ERR_INVALID;
}

/* ---- top ------------------------------------------------------------------------------- */

struct cr_top {
    cr_group *groups; /* sorted by fingerprint */
    size_t n, cap;
};

gf_err cr_top_alloc(cr_top **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? GF_OK : GF_ERR_NOMEM;
}

void cr_top_free(cr_top *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        cr_group_fini(&t->groups[i]);
    free(t->groups);
    free(t);
}

gf_err cr_top_add(cr_top *t, const cr_group *g)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(t->groups[mid].fingerprint, g->fingerprint);
        if (c == 0)
            return cr_group_merge(&t->groups[mid], g);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    cr_group *grown = gf_grow(t->groups, &t->cap, t->n + 1, sizeof *t->groups);
    if (!grown)
        return GF_ERR_NOMEM;
    t->groups = grown;
    memmove(&t->groups[lo + 1], &t->groups[lo], (t->n - lo) * sizeof *t->groups);
    t->n++;
    gf_err err = cr_group_init(&t->groups[lo], g->fingerprint);
    if (err == GF_OK)
        err = cr_group_merge(&t->groups[lo], g);
    return err;
}

static int most_first(const void *a, const void *b)
{
    const cr_group *x = *(const cr_group *const *)a, *y = *(const cr_group *const *)b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    if (x->last_seen_unix_ms != y->last_seen_unix_ms)
        return x->last_seen_unix_ms > y->last_seen_unix_ms ? -1 : 1;
    return strcmp(x->fingerprint, y->fingerprint);
}

gf_err cr_top_reply(cr_top *t, uint32_t limit, int64_t since_unix_ms, uint8_t **out, size_t *len)
{
    Gamefn__V1__CrashesQueryReply r = GAMEFN__V1__CRASHES_QUERY_REPLY__INIT;
    const cr_group **match = calloc(t->n ? t->n : 1, sizeof *match);
    Gamefn__V1__CrashSummary *items = calloc(limit, sizeof *items);
    Gamefn__V1__CrashSummary **ptrs = calloc(limit, sizeof *ptrs);
    char(*messages)[CR_SUMMARY_MESSAGE_MAX + 1] = calloc(limit, sizeof *messages);
    gf_err err = match && items && ptrs && messages ? GF_OK : GF_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; err == GF_OK && i < t->n; i++) {
        if (t->groups[i].last_seen_unix_ms < since_unix_ms)
            continue;
        match[n++] = &t->groups[i];
        r.crashes += t->groups[i].count;
    }
    if (err == GF_OK) {
        qsort(match, n, sizeof *match, most_first);
        r.fingerprints = n;
        r.n_top = n < limit ? n : limit;
        r.top = ptrs;
        for (size_t i = 0; i < r.n_top; i++) {
            const cr_group *g = match[i];
            Gamefn__V1__CrashSummary *s = &items[i];
            gamefn__v1__crash_summary__init(s);
            s->fingerprint = (char *)(uintptr_t)g->fingerprint;
            s->count = g->count;
            s->first_seen_unix_ms = g->first_seen_unix_ms;
            s->last_seen_unix_ms = g->last_seen_unix_ms;
            s->signature = g->sample.signature;
            s->message = (char *)(uintptr_t)cr_utf8_cut(g->sample.message ? g->sample.message : "",
                                                        CR_SUMMARY_MESSAGE_MAX, messages[i]);
            s->build = g->sample.build;
            s->platform = g->sample.platform;
            s->builds = (uint32_t)g->builds.n;
            ptrs[i] = s;
        }
        err = gf_pack(&r.base, out, len);
    }
    free(match);
    free(items);
    free(ptrs);
    free(messages);
    return err;
}

gf_err cr_detail_reply(const cr_group *g, uint32_t partitions, uint8_t **out, size_t *len)
{
    Gamefn__V1__CrashesQueryReply r = GAMEFN__V1__CRASHES_QUERY_REPLY__INIT;
    Gamefn__V1__CrashGroup m;
    gf_err err = cr_group_msg(g, &m);
    if (err != GF_OK)
        return err;
    r.detail = &m;
    r.partitions = partitions;
    err = gf_pack(&r.base, out, len);
    cr_group_msg_fini(&m);
    return err;
}
