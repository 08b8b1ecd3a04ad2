/*
 * effect_record.c — EffectRecord: effect + exact applied set (gamefn/effect_record.h).
 *
 * Design notes: why applied(s) = (window says DUPLICATE) and not dead(s) is exact.
 *
 * Setting (docs/EVENTS.md, "Why the consumer is exact"): a key's events reach its one
 * partition owner in stream order; a producer never publishes seq m unless every seq
 * <= m - W of it is acknowledged, i.e. stored (the window guarantee G). For every copy
 * the owner processes, it either applies the event (window mark), finds it applied
 * (skip), or dead-letters it: then, before the message is terminated, a dead mark is
 * written in the same compare-and-set as the key's other changes (the consumer
 * framework never terminates a keyed event otherwise; if it cannot write, it waits).
 *
 * Invariant (D): every seq this key processed and did not apply is a dead mark, unless
 * pruned. The window's invariant (I): its set A is exactly the applied seqs in
 * (M - W, M].
 *
 * applied(s) is exact:
 *  - s > M: nothing above M was applied (M is the highest applied). Window: NEW.
 *  - M - W < s <= M: by (I), applied iff s in A; a dead mark for s means it was not
 *    applied, and then s is not in A either, so "not dead" changes nothing.
 *  - s <= M - W: the copy of M the key applied was published by its producer under G
 *    (a re-drive's copy was too, originally), so a copy of s was stored before it and
 *    processed before it. That copy was applied, found applied (so applied earlier) or
 *    dead-lettered; in the last case, and only if no later copy was applied, s is still a
 *    dead mark by (D) (applying removes the mark). So s is applied iff it is not a dead
 *    mark.
 * Hence a re-driven event (or a spool replay) is applied iff this key never applied
 * it, whatever its distance from M. A re-drive that is applied below M - W cannot be
 * put in the window (it is already counted there); removing its mark is what records
 * it, so a second re-drive finds it applied.
 *
 * Where it is not exact (documented): a pruned window source (idle past the dedup
 * horizon) makes its old seqs new again; a pruned or dropped dead mark makes its event
 * look applied (a re-drive is then skipped, never applied twice).
 */
#include "gamefn/effect_record.h"

#include <stdlib.h>
#include <string.h>

#include "gamefn/util.h"
#include "gamefn/v1/state.pb-c.h"

enum { RECORD_VERSION = 1 };

gf_err gf_effect_record_init(gf_effect_record *r, uint32_t w)
{
    memset(r, 0, sizeof *r);
    return gf_dedup_alloc(w, &r->applied);
}

void gf_effect_record_fini(gf_effect_record *r)
{
    if (!r)
        return;
    gf_dedup_free(r->applied);
    free(r->dead);
    free(r->effect);
    memset(r, 0, sizeof *r);
}

/* <0, 0, >0 like strcmp, over (source id bytes, seq). */
static int mark_cmp(const char *src, uint64_t seq, const gf_dead_mark *m)
{
    int c = strcmp(src, m->source_id);
    if (c != 0)
        return c;
    return seq < m->seq ? -1 : seq > m->seq ? 1 : 0;
}

/* Index of the first mark >= (src, seq); *found if equal. */
static size_t mark_find(const gf_effect_record *r, const char *src, uint64_t seq, bool *found)
{
    size_t lo = 0, hi = r->ndead;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (mark_cmp(src, seq, &r->dead[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < r->ndead && mark_cmp(src, seq, &r->dead[lo]) == 0;
    return lo;
}

static bool source_ok(const char *src)
{
    return gf_token_len(src, GF_EFFECT_SOURCE_MAX) > 0;
}

gf_err gf_effect_record_applied(const gf_effect_record *r, const char *source_id, uint64_t seq,
                                bool *applied)
{
    if (!source_ok(source_id) || seq == 0)
        return GF_ERR_INVALID;
    bool dead;
    mark_find(r, source_id, seq, &dead);
    gf_dedup_verdict v;
    gf_err err = gf_dedup_check(r->applied, source_id, seq, &v);
    if (err != GF_OK)
        return err;
    *applied = v == GF_DEDUP_DUPLICATE && !dead;
    return GF_OK;
}

static void mark_remove(gf_effect_record *r, size_t i)
{
    memmove(&r->dead[i], &r->dead[i + 1], (r->ndead - i - 1) * sizeof *r->dead);
    r->ndead--;
}

gf_err gf_effect_record_mark_applied(gf_effect_record *r, const char *source_id, uint64_t seq,
                                     int64_t now_unix_ms)
{
    if (!source_ok(source_id) || seq == 0 || now_unix_ms < 0)
        return GF_ERR_INVALID;
    bool dead;
    size_t i = mark_find(r, source_id, seq, &dead);
    gf_dedup_verdict v;
    gf_err err = gf_dedup_check(r->applied, source_id, seq, &v);
    if (err != GF_OK)
        return err;
    if (v == GF_DEDUP_DUPLICATE && !dead)
        return GF_ERR_CONFLICT;
    if (v == GF_DEDUP_NEW &&
        (err = gf_dedup_mark(r->applied, source_id, seq, now_unix_ms)) != GF_OK)
        return err;
    if (dead)
        mark_remove(r, i);
    return GF_OK;
}

gf_err gf_effect_record_mark_dead(gf_effect_record *r, const char *source_id, uint64_t seq,
                                  int64_t now_unix_ms, bool *dropped)
{
    if (dropped)
        *dropped = false;
    bool applied;
    gf_err err =
        now_unix_ms < 0 ? GF_ERR_INVALID : gf_effect_record_applied(r, source_id, seq, &applied);
    if (err != GF_OK)
        return err;
    if (applied)
        return GF_ERR_CONFLICT;
    bool found;
    size_t i = mark_find(r, source_id, seq, &found);
    if (found)
        return GF_OK;
    if (r->ndead >= GF_EFFECT_DEAD_MAX) { /* drop the oldest (the first of equals) */
        size_t old = 0;
        for (size_t k = 1; k < r->ndead; k++)
            old = r->dead[k].dead_unix_ms < r->dead[old].dead_unix_ms ? k : old;
        mark_remove(r, old);
        if (old < i)
            i--;
        if (dropped)
            *dropped = true;
    }
    gf_dead_mark *p = gf_grow(r->dead, &r->dead_cap, r->ndead + 1, sizeof *p);
    if (!p)
        return GF_ERR_NOMEM;
    r->dead = p;
    memmove(&r->dead[i + 1], &r->dead[i], (r->ndead - i) * sizeof *r->dead);
    memset(&r->dead[i], 0, sizeof r->dead[i]);
    memcpy(r->dead[i].source_id, source_id, strlen(source_id) + 1);
    r->dead[i].seq = seq;
    r->dead[i].dead_unix_ms = now_unix_ms;
    r->ndead++;
    return GF_OK;
}

void gf_effect_record_prune(gf_effect_record *r, int64_t dedup_cutoff_unix_ms,
                            int64_t dead_cutoff_unix_ms, size_t *sources, size_t *marks)
{
    size_t s = dedup_cutoff_unix_ms > 0 ? gf_dedup_prune(r->applied, dedup_cutoff_unix_ms) : 0;
    size_t kept = 0, before = r->ndead;
    for (size_t i = 0; i < r->ndead; i++) {
        if (dead_cutoff_unix_ms <= 0 || r->dead[i].dead_unix_ms >= dead_cutoff_unix_ms)
            r->dead[kept++] = r->dead[i];
    }
    r->ndead = kept;
    if (sources)
        *sources = s;
    if (marks)
        *marks = before - kept;
}

gf_err gf_effect_record_set_effect(gf_effect_record *r, const uint8_t *effect, size_t len)
{
    uint8_t *copy = NULL;
    if (len > 0) {
        if (!(copy = malloc(len)))
            return GF_ERR_NOMEM;
        memcpy(copy, effect, len);
    }
    free(r->effect);
    r->effect = copy;
    r->effect_len = len;
    return GF_OK;
}

/* ---- encoding ------------------------------------------------------------------ */

gf_err gf_effect_record_encode(const gf_effect_record *r, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    Gamefn__V1__EffectRecord m = GAMEFN__V1__EFFECT_RECORD__INIT;
    Gamefn__V1__DeadMark *marks = calloc(r->ndead ? r->ndead : 1, sizeof *marks);
    Gamefn__V1__DeadMark **ptrs = calloc(r->ndead ? r->ndead : 1, sizeof *ptrs);
    uint8_t *window = NULL;
    size_t wlen = 0;
    gf_err err = marks && ptrs ? gf_dedup_encode(r->applied, &window, &wlen) : GF_ERR_NOMEM;
    if (err != GF_OK)
        goto out;
    for (size_t i = 0; i < r->ndead; i++) {
        gamefn__v1__dead_mark__init(&marks[i]);
        marks[i].source_id = (char *)r->dead[i].source_id;
        marks[i].seq = r->dead[i].seq;
        marks[i].dead_unix_ms = r->dead[i].dead_unix_ms;
        ptrs[i] = &marks[i];
    }
    m.version = RECORD_VERSION;
    m.owner_token = r->owner_token;
    m.applied.data = window;
    m.applied.len = wlen;
    m.n_dead = r->ndead;
    m.dead = ptrs;
    m.effect.data = r->effect;
    m.effect.len = r->effect_len;
    m.updated_unix_ms = r->updated_unix_ms;
    err = gf_pack(&m.base, out, len);
out:
    free(window);
    free(marks);
    free(ptrs);
    return err;
}

static gf_err fill(const Gamefn__V1__EffectRecord *m, gf_effect_record *r)
{
    if (m->version != RECORD_VERSION || m->updated_unix_ms < 0 || m->n_dead > GF_EFFECT_DEAD_MAX)
        return GF_ERR_INVALID;
    gf_err err = gf_dedup_decode(m->applied.data, m->applied.len, &r->applied);
    if (err != GF_OK)
        return err;
    r->owner_token = m->owner_token;
    r->updated_unix_ms = m->updated_unix_ms;
    if (m->n_dead > 0) {
        if (!(r->dead = calloc(m->n_dead, sizeof *r->dead)))
            return GF_ERR_NOMEM;
        r->dead_cap = m->n_dead;
    }
    for (size_t i = 0; i < m->n_dead; i++) {
        const Gamefn__V1__DeadMark *d = m->dead[i];
        if (!source_ok(d->source_id) || d->seq == 0 || d->dead_unix_ms < 0)
            return GF_ERR_INVALID;
        if (i > 0 && mark_cmp(d->source_id, d->seq, &r->dead[i - 1]) <= 0)
            return GF_ERR_INVALID; /* not sorted, or a duplicate */
        memcpy(r->dead[i].source_id, d->source_id, strlen(d->source_id) + 1);
        r->dead[i].seq = d->seq;
        r->dead[i].dead_unix_ms = d->dead_unix_ms;
        r->ndead = i + 1;
    }
    return gf_effect_record_set_effect(r, m->effect.data, m->effect.len);
}

gf_err gf_effect_record_decode(const uint8_t *buf, size_t len, gf_effect_record *r)
{
    memset(r, 0, sizeof *r);
    Gamefn__V1__EffectRecord *m = gamefn__v1__effect_record__unpack(NULL, len, buf);
    if (!m)
        return GF_ERR_INVALID;
    gf_err err = fill(m, r);
    gamefn__v1__effect_record__free_unpacked(m, NULL);
    if (err != GF_OK)
        gf_effect_record_fini(r);
    return err;
}

gf_err gf_effect_record_peek(const uint8_t *buf, size_t len, uint64_t *owner_token,
                             uint8_t **effect, size_t *effect_len)
{
    *effect = NULL;
    *effect_len = 0;
    Gamefn__V1__EffectRecord *m = gamefn__v1__effect_record__unpack(NULL, len, buf);
    if (!m)
        return GF_ERR_INVALID;
    gf_err err = m->version == RECORD_VERSION ? GF_OK : GF_ERR_INVALID;
    if (err == GF_OK && m->effect.len > 0) {
        if ((*effect = malloc(m->effect.len)) != NULL) {
            memcpy(*effect, m->effect.data, m->effect.len);
            *effect_len = m->effect.len;
        } else {
            err = GF_ERR_NOMEM;
        }
    }
    if (owner_token)
        *owner_token = m->owner_token;
    gamefn__v1__effect_record__free_unpacked(m, NULL);
    return err;
}
