/*
 * lease.c — KV leases with fencing tokens (see gamefn/lease.h).
 */
#include "gamefn/lease.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/kv.h"

gf_err gf_lease_encode(int64_t expires_unix_ms, const char *holder, char *buf, size_t size)
{
    if (!holder || !holder[0] || strchr(holder, ' ') || expires_unix_ms < 0)
        return GF_ERR_INVALID;
    int n = snprintf(buf, size, "%" PRId64 " %s", expires_unix_ms, holder);
    if (n < 0 || (size_t)n >= size)
        return GF_ERR_INVALID;
    return GF_OK;
}

gf_err gf_lease_decode(const char *value, size_t len, int64_t *expires_unix_ms, char *holder,
                       size_t holder_size)
{
    char text[256];
    if (!value || len == 0 || len >= sizeof text)
        return GF_ERR_INVALID;
    memcpy(text, value, len);
    text[len] = '\0';
    char *space = strchr(text, ' ');
    if (!space || space == text || !space[1] || strchr(space + 1, ' '))
        return GF_ERR_INVALID;
    *space = '\0';
    char *end = NULL;
    errno = 0;
    long long expires = strtoll(text, &end, 10);
    if (*end != '\0' || expires < 0 || errno == ERANGE)
        return GF_ERR_INVALID;
    if (strlen(space + 1) >= holder_size)
        return GF_ERR_INVALID;
    strcpy(holder, space + 1);
    *expires_unix_ms = expires;
    return GF_OK;
}

void gf_lease_init(gf_lease *l, jsCtx *js, kvStore *kv, const char *key, const char *holder,
                   int64_t ttl_ms)
{
    memset(l, 0, sizeof *l);
    l->js = js;
    l->kv = kv;
    snprintf(l->key, sizeof l->key, "%s", key);
    snprintf(l->holder, sizeof l->holder, "%s", holder);
    l->ttl_ms = ttl_ms;
}

static void lost(gf_lease *l)
{
    l->held = false;
    l->token = 0;
    l->revision = 0;
}

gf_err gf_lease_tick(gf_lease *l, int64_t now_unix_ms)
{
    char value[256];
    int64_t expires = now_unix_ms + l->ttl_ms;
    gf_err err = gf_lease_encode(expires, l->holder, value, sizeof value);
    if (err != GF_OK)
        return err;

    if (l->held) {
        uint64_t rev = 0;
        err = gf_kv_update(l->kv, l->key, value, strlen(value), l->revision, &rev);
        if (err == GF_OK) {
            l->revision = rev;
            l->expires_unix_ms = expires;
            return GF_OK;
        }
        lost(l);
        return err;
    }

    kvEntry *e = NULL;
    uint64_t rev = 0;
    err = gf_kv_get(l->kv, l->key, &e);
    if (err == GF_ERR_NOT_FOUND) {
        err = gf_kv_create(l->kv, l->key, value, strlen(value), &rev);
    } else if (err == GF_OK) {
        int64_t their_expiry = 0;
        char holder[96];
        gf_err derr = gf_lease_decode(kvEntry_ValueString(e), (size_t)kvEntry_ValueLen(e),
                                      &their_expiry, holder, sizeof holder);
        /* A malformed value is treated as expired: it cannot name a live holder. */
        bool ours = derr == GF_OK && strcmp(holder, l->holder) == 0;
        if (derr == GF_OK && !ours && their_expiry > now_unix_ms)
            err = GF_ERR_CONFLICT;
        else
            err = gf_kv_update(l->kv, l->key, value, strlen(value), kvEntry_Revision(e), &rev);
    }
    kvEntry_Destroy(e);
    if (err != GF_OK) {
        lost(l);
        return err;
    }
    l->held = true;
    l->revision = rev;
    l->token = rev;
    l->expires_unix_ms = expires;
    return GF_OK;
}

gf_err gf_lease_release(gf_lease *l)
{
    if (!l->held)
        return GF_OK;
    gf_err err = gf_kv_delete_if(l->js, l->kv, l->key, l->revision, NULL);
    lost(l);
    return err;
}
