/* fleet_store.c — fleet records in KV by compare-and-set (see fleet_store.h). */
#include "fleet_store.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/publish.h"
#include "gamefn/util.h"
#include "gamefn/v1/error.pb-c.h"

enum { CHANGE_ATTEMPTS = 8 };

void fleet_written_fini(fleet_written *w)
{
    if (!w)
        return;
    free(w->data);
    gamefn__v1__server_record__free_unpacked(w->rec, NULL);
    memset(w, 0, sizeof *w);
}

gf_err fleet_written_take(uint64_t rev, uint8_t *data, size_t len, const char *key,
                          fleet_written *out, fleet_problem *p)
{
    memset(out, 0, sizeof *out);
    out->revision = rev;
    out->data = data;
    out->len = len;
    out->rec = gamefn__v1__server_record__unpack(NULL, len, data);
    gf_err checked = GF_ERR_INVALID;
    if (out->rec)
        checked = fleet_check_record(out->rec, p);
    else
        snprintf(p->text, sizeof p->text, "stored record %s does not decode", key);
    if (checked != GF_OK) {
        fleet_written_fini(out);
        out->revision = rev; /* so a writer can replace it */
    }
    return checked;
}

gf_err fleet_store_get(kvStore *kv, const char *key, fleet_written *out, fleet_problem *p)
{
    kvEntry *e = NULL;
    memset(out, 0, sizeof *out);
    gf_err err = gf_kv_get(kv, key, &e);
    if (err != GF_OK)
        return err;
    size_t len = (size_t)kvEntry_ValueLen(e);
    uint64_t rev = kvEntry_Revision(e);
    uint8_t *data = malloc(len ? len : 1);
    if (!data) {
        kvEntry_Destroy(e);
        return GF_ERR_NOMEM;
    }
    memcpy(data, kvEntry_Value(e), len);
    kvEntry_Destroy(e);
    return fleet_written_take(rev, data, len, key, out, p);
}

/* The code of a result refused for want of room, else 0. */
static int full_code(gf_err err, int js_code)
{
    return gf_publish_full(err, js_code) ? js_code : 0;
}

int fleet_store_full(const fleet_problem *p)
{
    return p->full;
}

gf_err fleet_store_full_problem(fleet_problem *p, int js_code)
{
    *p = (fleet_problem){.err = GF_ERR_UNAVAILABLE,
                         .code = GAMEFN__V1__ERROR_CODE__ERROR_CODE_RESOURCE_EXHAUSTED,
                         .full = js_code};
    snprintf(p->text, sizeof p->text,
             "the fleet bucket is full (JetStream %d); nothing was stored: retry later", js_code);
    return GF_ERR_NATS;
}

gf_err fleet_store_put(jsCtx *js, kvStore *kv, const char *key,
                       const Gamefn__V1__ServerRecord *next, uint64_t last, fleet_written *out,
                       int *full)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int js_code = 0;
    if (full)
        *full = 0;
    if (gf_pack(&next->base, &buf, &len) != GF_OK)
        return GF_ERR_NOMEM;
    uint64_t rev = 0;
    gf_err err = gf_kv_put_if(js, kv, key, buf, len, last, &rev, &js_code);
    if (full)
        *full = full_code(err, js_code);
    if (err != GF_OK || !out) {
        free(buf);
        return err;
    }
    out->revision = rev;
    out->data = buf;
    out->len = len;
    out->rec = gamefn__v1__server_record__unpack(NULL, len, buf);
    if (!out->rec) {
        fleet_written_fini(out);
        return GF_ERR_NOMEM;
    }
    return GF_OK;
}

gf_err fleet_store_change_from(jsCtx *js, kvStore *kv, const char *key, fleet_written *guess,
                               fleet_change_fn change, void *arg, fleet_written *out,
                               fleet_problem *p)
{
    for (int attempt = 0; attempt < CHANGE_ATTEMPTS; attempt++) {
        fleet_written cur = {0};
        fleet_next next;
        gf_err err = GF_OK;
        bool guessed = attempt == 0 && guess && guess->revision && guess->rec;
        if (guessed) {
            cur = *guess; /* taken over */
            memset(guess, 0, sizeof *guess);
        } else {
            err = fleet_store_get(kv, key, &cur, p);
        }
        if (err != GF_OK && err != GF_ERR_NOT_FOUND && err != GF_ERR_INVALID)
            return err;
        /* A missing record, or one that is not a valid record (replaced by CAS on its
         * revision, which fleet_store_get kept): the transition sees NULL. */
        err = change(cur.rec, arg, &next, p);
        if (err != GF_OK && guessed) { /* refused on the copy, which may be behind: read */
            fleet_written_fini(&cur);
            *p = (fleet_problem){0};
            continue;
        }
        if (err != GF_OK) { /* the transition refused: no retry */
            fleet_written_fini(&cur);
            return err;
        }
        int full = 0;
        err = fleet_store_put(js, kv, key, &next.rec, cur.revision, out, &full);
        fleet_written_fini(&cur);
        if (full)
            return fleet_store_full_problem(p, full);
        if (err != GF_ERR_CONFLICT)
            return err;
    }
    return GF_ERR_CONFLICT;
}

gf_err fleet_store_change(jsCtx *js, kvStore *kv, const char *key, fleet_change_fn change,
                          void *arg, fleet_written *out, fleet_problem *p)
{
    return fleet_store_change_from(js, kv, key, NULL, change, arg, out, p);
}

static gf_err change_release(const Gamefn__V1__ServerRecord *old, void *arg, fleet_next *next,
                             fleet_problem *p)
{
    const char *match_id = arg;
    if (!old || !old->allocated_match_id || strcmp(old->allocated_match_id, match_id) != 0) {
        p->err = GF_ERR_PERMANENT;
        return GF_ERR_PERMANENT;
    }
    fleet_apply_release(old, gf_clock_unix_ms(), next);
    return GF_OK;
}

gf_err fleet_store_release(jsCtx *js, kvStore *kv, const char *key, const char *match_id,
                           fleet_written *out, int *full)
{
    fleet_problem p = {0};
    gf_err err =
        fleet_store_change(js, kv, key, change_release, (void *)(uintptr_t)match_id, out, &p);
    if (full)
        *full = fleet_store_full(&p);
    return err;
}

gf_err fleet_store_delete(jsCtx *js, kvStore *kv, const char *key, uint64_t last, int *full)
{
    int js_code = 0;
    gf_err err = gf_kv_delete_if(js, kv, key, last, &js_code);
    if (full)
        *full = full_code(err, js_code);
    return err;
}
