/*
 * rollup_codec.c — a minute rollup to MinuteRollup bytes and back (rollup.h).
 *
 * Design notes: the decoder rebuilds the tables only from lists it has checked:
 * name tokens in strictly increasing byte order (so unique), counts >= 1, at most
 * max_keys per dimension, and sums that add up (types + other == total; datacenters
 * + other <= total; queues + other <= total), with every addition checked for
 * overflow.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/util.h"
#include "gamefn/v1/state.pb-c.h"
#include "rollup_internal.h"

/* Fills the n RollupCount messages (and pointers) of one table. */
static void table_to_msg(const gf_rollup_table *t, Gamefn__V1__RollupCount *c,
                         Gamefn__V1__RollupCount **ptrs)
{
    for (size_t i = 0; i < t->n; i++) {
        gamefn__v1__rollup_count__init(&c[i]);
        c[i].name = (char *)(uintptr_t)t->kv[i].name;
        c[i].count = t->kv[i].count;
        ptrs[i] = &c[i];
    }
}

gf_err gf_rollup_encode(const gf_rollup *r, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    size_t n = r->dims[0].n + r->dims[1].n + r->dims[2].n;
    Gamefn__V1__RollupCount *c = malloc((n ? n : 1) * sizeof *c);
    Gamefn__V1__RollupCount **p = malloc((n ? n : 1) * sizeof *p);
    gf_err err = c && p ? GF_OK : GF_ERR_NOMEM;
    Gamefn__V1__MinuteRollup m = GAMEFN__V1__MINUTE_ROLLUP__INIT;
    if (err == GF_OK) {
        const gf_rollup_table *t = r->dims;
        table_to_msg(&t[0], c, p);
        table_to_msg(&t[1], c + t[0].n, p + t[0].n);
        table_to_msg(&t[2], c + t[0].n + t[1].n, p + t[0].n + t[1].n);
        m.minute_unix_ms = r->minute;
        m.total = r->total;
        m.n_by_type = t[0].n;
        m.by_type = p;
        m.n_by_datacenter = t[1].n;
        m.by_datacenter = p + t[0].n;
        m.n_by_queue = t[2].n;
        m.by_queue = p + t[0].n + t[1].n;
        m.other_type = t[0].other;
        m.other_datacenter = t[1].other;
        m.other_queue = t[2].other;
        err = gf_pack(&m.base, out, len);
    }
    free(p);
    free(c);
    return err;
}

/* Checks one list and loads it into t; *sum = its counts plus other. */
static gf_err list_from_msg(Gamefn__V1__RollupCount **list, size_t n, uint64_t other,
                            uint32_t max_keys, gf_rollup_table *t, uint64_t *sum)
{
    if (n > max_keys)
        return GF_ERR_INVALID;
    *sum = other;
    for (size_t i = 0; i < n; i++) {
        const Gamefn__V1__RollupCount *c = list[i];
        if (gf_rollup_name_len(c->name) == 0 || c->count == 0 || c->count > UINT64_MAX - *sum ||
            (i > 0 && strcmp(list[i - 1]->name, c->name) >= 0))
            return GF_ERR_INVALID;
        *sum += c->count;
        gf_err err = gf_rollup_table_push(t, c->name, c->count);
        if (err != GF_OK)
            return err;
    }
    t->other = other;
    return GF_OK;
}

static gf_err rollup_from_msg(const Gamefn__V1__MinuteRollup *m, gf_rollup *r)
{
    uint64_t types = 0, dcs = 0, queues = 0;
    gf_err err =
        list_from_msg(m->by_type, m->n_by_type, m->other_type, r->max_keys, &r->dims[0], &types);
    if (err == GF_OK)
        err = list_from_msg(m->by_datacenter, m->n_by_datacenter, m->other_datacenter, r->max_keys,
                            &r->dims[1], &dcs);
    if (err == GF_OK)
        err = list_from_msg(m->by_queue, m->n_by_queue, m->other_queue, r->max_keys, &r->dims[2],
                            &queues);
    if (err == GF_OK && (types != m->total || dcs > m->total || queues > m->total))
        err = GF_ERR_INVALID;
    r->total = m->total;
    return err;
}

gf_err gf_rollup_decode(const uint8_t *buf, size_t len, uint32_t max_keys, gf_rollup **out)
{
    *out = NULL;
    Gamefn__V1__MinuteRollup *m = gamefn__v1__minute_rollup__unpack(NULL, len, buf);
    if (m == NULL)
        return GF_ERR_INVALID;
    gf_rollup *r = NULL;
    gf_err err = gf_rollup_alloc(m->minute_unix_ms, max_keys, &r);
    if (err == GF_OK)
        err = rollup_from_msg(m, r);
    gamefn__v1__minute_rollup__free_unpacked(m, NULL);
    if (err != GF_OK) {
        gf_rollup_free(r);
        return err;
    }
    *out = r;
    return GF_OK;
}
