/*
 * crash_group.c — one fingerprint's crashes (see crash_group.h).
 */
#include "crash_group.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/util.h"

static bool hex32(const char *s)
{
    if (!s || strlen(s) != GF_FINGERPRINT_HEX_LEN)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

gf_err cr_group_init(cr_group *g, const char *fingerprint)
{
    memset(g, 0, sizeof *g);
    if (!hex32(fingerprint))
        return GF_ERR_INVALID;
    memcpy(g->fingerprint, fingerprint, GF_FINGERPRINT_HEX_LEN + 1);
    return GF_OK;
}

static void sample_fini(cr_sample *s)
{
    free(s->signature);
    free(s->message);
    free(s->stack);
    free(s->build);
    free(s->platform);
    free(s->event_id);
    free(s->player_id);
    free(s->source_id);
    memset(s, 0, sizeof *s);
}

void cr_group_fini(cr_group *g)
{
    if (!g)
        return;
    free(g->normalized);
    sample_fini(&g->sample);
    memset(g, 0, sizeof *g);
}

gf_err cr_fingerprint_of(const Gamefn__V1__GameEvent *ev, unsigned max_frames, gf_fingerprint *fp,
                         char *normalized, size_t normalized_size)
{
    if (ev->payload_case != GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH || !ev->crash)
        return GF_ERR_INVALID;
    const Gamefn__V1__CrashEvent *c = ev->crash;
    gf_err err = gf_fingerprint_compute(c->stack, strlen(c->stack), c->signature,
                                        strlen(c->signature), max_frames, fp);
    unsigned frames = 0;
    if (err == GF_OK && normalized)
        err = gf_fingerprint_normalize(c->stack, strlen(c->stack), max_frames, normalized,
                                       normalized_size, &frames);
    return err;
}

/* Whether a (occurred, source, seq) comes before b's: the sample rule. */
static bool earlier(int64_t at, const char *source, uint64_t seq, const cr_sample *b)
{
    if (!b->source_id)
        return true;
    if (at != b->occurred_unix_ms)
        return at < b->occurred_unix_ms;
    int c = strcmp(source, b->source_id);
    return c != 0 ? c < 0 : seq < b->source_seq;
}

static char *dup_or_null(const char *s, bool *failed)
{
    char *d = strdup(s ? s : "");
    if (!d)
        *failed = true;
    return d;
}

static gf_err sample_set(cr_sample *s, int64_t at, const char *signature, const char *message,
                         const char *stack, const char *build, const char *platform,
                         const char *event_id, const char *player_id, const char *source_id,
                         uint64_t source_seq)
{
    bool failed = false;
    cr_sample n = {.occurred_unix_ms = at, .source_seq = source_seq};
    n.signature = dup_or_null(signature, &failed);
    n.message = dup_or_null(message, &failed);
    n.stack = dup_or_null(stack, &failed);
    n.build = dup_or_null(build, &failed);
    n.platform = dup_or_null(platform, &failed);
    n.event_id = dup_or_null(event_id, &failed);
    n.player_id = dup_or_null(player_id, &failed);
    n.source_id = dup_or_null(source_id, &failed);
    if (failed) {
        sample_fini(&n);
        return GF_ERR_NOMEM;
    }
    sample_fini(s);
    *s = n;
    return GF_OK;
}

/* Counts `count` under name (first come keeps a slot; past the bound: other). */
static void counts_add(cr_counts *c, const char *name, uint64_t count)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int cmp = strcmp(c->items[mid].name, name);
        if (cmp == 0) {
            c->items[mid].count += count;
            return;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (c->n == CR_COUNTS_MAX || strlen(name) > CR_NAME_MAX) {
        c->other += count;
        return;
    }
    memmove(&c->items[lo + 1], &c->items[lo], (c->n - lo) * sizeof *c->items);
    snprintf(c->items[lo].name, sizeof c->items[lo].name, "%s", name);
    c->items[lo].count = count;
    c->n++;
}

static int by_count(const void *a, const void *b)
{
    const cr_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const cr_count *)a)->name, ((const cr_count *)b)->name);
}

/* into + from: the largest counts keep their names, the rest fold into other. */
static void counts_merge(cr_counts *into, const cr_counts *from)
{
    cr_count all[2 * CR_COUNTS_MAX];
    size_t n = 0;
    memcpy(all, into->items, into->n * sizeof *all);
    n = into->n;
    for (size_t i = 0; i < from->n; i++) {
        size_t j = 0;
        while (j < into->n && strcmp(all[j].name, from->items[i].name) != 0)
            j++;
        if (j < into->n)
            all[j].count += from->items[i].count;
        else
            all[n++] = from->items[i];
    }
    uint64_t other = into->other + from->other;
    qsort(all, n, sizeof *all, by_count);
    for (size_t i = CR_COUNTS_MAX; i < n; i++)
        other += all[i].count;
    into->n = n < CR_COUNTS_MAX ? n : CR_COUNTS_MAX;
    memcpy(into->items, all, into->n * sizeof *all);
    qsort(into->items, into->n, sizeof *into->items, by_name);
    into->other = other;
}

gf_err cr_group_add(cr_group *g, const Gamefn__V1__GameEvent *ev, unsigned max_frames)
{
    if (ev->payload_case != GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH || !ev->crash)
        return GF_ERR_INVALID;
    const Gamefn__V1__CrashEvent *c = ev->crash;
    if (g->count == 0) {
        gf_fingerprint fp;
        char normalized[GF_FINGERPRINT_FRAMES_MAX * (GF_FINGERPRINT_FRAME_MAX + 1) + 1];
        gf_err err = cr_fingerprint_of(ev, max_frames, &fp, normalized, sizeof normalized);
        if (err != GF_OK)
            return err;
        char *copy = strdup(normalized);
        if (!copy)
            return GF_ERR_NOMEM;
        free(g->normalized);
        g->normalized = copy;
        g->frames = fp.frames;
    }
    int64_t at = ev->occurred_unix_ms;
    if (earlier(at, ev->source_id, ev->source_seq, &g->sample)) {
        gf_err err =
            sample_set(&g->sample, at, c->signature, c->message, c->stack, c->build, c->platform,
                       ev->event_id, ev->player_id, ev->source_id, ev->source_seq);
        if (err != GF_OK)
            return err;
    }
    if (g->count == 0 || at < g->first_seen_unix_ms)
        g->first_seen_unix_ms = at;
    if (g->count == 0 || at > g->last_seen_unix_ms)
        g->last_seen_unix_ms = at;
    g->count++;
    counts_add(&g->builds, c->build, 1);
    counts_add(&g->platforms, c->platform, 1);
    return GF_OK;
}

gf_err cr_group_merge(cr_group *into, const cr_group *from)
{
    if (strcmp(into->fingerprint, from->fingerprint) != 0)
        return GF_ERR_INVALID;
    if (from->count == 0)
        return GF_OK;
    const cr_sample *s = &from->sample;
    if (s->source_id && earlier(s->occurred_unix_ms, s->source_id, s->source_seq, &into->sample)) {
        gf_err err = sample_set(&into->sample, s->occurred_unix_ms, s->signature, s->message,
                                s->stack, s->build, s->platform, s->event_id, s->player_id,
                                s->source_id, s->source_seq);
        if (err != GF_OK)
            return err;
    }
    if (!into->normalized && from->normalized) {
        if (!(into->normalized = strdup(from->normalized)))
            return GF_ERR_NOMEM;
        into->frames = from->frames;
    }
    if (into->count == 0 || from->first_seen_unix_ms < into->first_seen_unix_ms)
        into->first_seen_unix_ms = from->first_seen_unix_ms;
    if (into->count == 0 || from->last_seen_unix_ms > into->last_seen_unix_ms)
        into->last_seen_unix_ms = from->last_seen_unix_ms;
    into->count += from->count;
    counts_merge(&into->builds, &from->builds);
    counts_merge(&into->platforms, &from->platforms);
    return GF_OK;
}

/* ---- encoding --------------------------------------------------------------------------- */

static gf_err counts_msg(const cr_counts *c, Gamefn__V1__CrashCount ***out, size_t *n)
{
    *out = NULL;
    *n = c->n;
    if (c->n == 0)
        return GF_OK;
    Gamefn__V1__CrashCount **ptrs = calloc(c->n, sizeof *ptrs);
    Gamefn__V1__CrashCount *items = calloc(c->n, sizeof *items);
    if (!ptrs || !items) {
        free(ptrs);
        free(items);
        return GF_ERR_NOMEM;
    }
    for (size_t i = 0; i < c->n; i++) {
        gamefn__v1__crash_count__init(&items[i]);
        items[i].name = (char *)(uintptr_t)c->items[i].name;
        items[i].count = c->items[i].count;
        ptrs[i] = &items[i];
    }
    *out = ptrs;
    return GF_OK;
}

static char *or_empty(char *s)
{
    return s ? s : (char *)(uintptr_t) "";
}

gf_err cr_group_msg(const cr_group *g, Gamefn__V1__CrashGroup *m)
{
    gamefn__v1__crash_group__init(m);
    m->fingerprint = (char *)(uintptr_t)g->fingerprint;
    m->count = g->count;
    m->first_seen_unix_ms = g->first_seen_unix_ms;
    m->last_seen_unix_ms = g->last_seen_unix_ms;
    m->frames = g->frames;
    m->normalized = or_empty(g->normalized);
    m->signature = or_empty(g->sample.signature);
    m->message = or_empty(g->sample.message);
    m->stack = or_empty(g->sample.stack);
    m->build = or_empty(g->sample.build);
    m->platform = or_empty(g->sample.platform);
    m->sample_event_id = or_empty(g->sample.event_id);
    m->sample_player_id = or_empty(g->sample.player_id);
    m->sample_source_id = or_empty(g->sample.source_id);
    m->sample_source_seq = g->sample.source_seq;
    m->sample_occurred_unix_ms = g->sample.occurred_unix_ms;
    m->other_builds = g->builds.other;
    m->other_platforms = g->platforms.other;
    gf_err err = counts_msg(&g->builds, &m->builds, &m->n_builds);
    if (err == GF_OK)
        err = counts_msg(&g->platforms, &m->platforms, &m->n_platforms);
    if (err != GF_OK)
        cr_group_msg_fini(m);
    return err;
}

void cr_group_msg_fini(Gamefn__V1__CrashGroup *m)
{
    if (m->n_builds)
        free(m->builds[0]);
    free(m->builds);
    if (m->n_platforms)
        free(m->platforms[0]);
    free(m->platforms);
    m->builds = NULL;
    m->platforms = NULL;
    m->n_builds = m->n_platforms = 0;
}

gf_err cr_group_encode(const cr_group *g, uint8_t **out, size_t *len)
{
    Gamefn__V1__CrashGroup m;
    gf_err err = cr_group_msg(g, &m);
    if (err == GF_OK)
        err = gf_pack(&m.base, out, len);
    cr_group_msg_fini(&m);
    return err;
}

static gf_err counts_decode(Gamefn__V1__CrashCount **items, size_t n, uint64_t other, cr_counts *c,
                            uint64_t *sum)
{
    if (n > CR_COUNTS_MAX)
        return GF_ERR_INVALID;
    *sum = other;
    for (size_t i = 0; i < n; i++) {
        const char *name = items[i]->name;
        if (strlen(name) > CR_NAME_MAX || items[i]->count == 0 ||
            (i > 0 && strcmp(items[i - 1]->name, name) >= 0))
            return GF_ERR_INVALID;
        snprintf(c->items[i].name, sizeof c->items[i].name, "%s", name);
        c->items[i].count = items[i]->count;
        *sum += items[i]->count;
    }
    c->n = n;
    c->other = other;
    return GF_OK;
}

gf_err cr_group_decode(const uint8_t *buf, size_t len, cr_group *g)
{
    memset(g, 0, sizeof *g);
    Gamefn__V1__CrashGroup *m = gamefn__v1__crash_group__unpack(NULL, len, buf);
    if (!m)
        return GF_ERR_INVALID;
    gf_err err = cr_group_init(g, m->fingerprint);
    uint64_t builds = 0, platforms = 0;
    if (err == GF_OK && (m->count == 0 || m->first_seen_unix_ms > m->last_seen_unix_ms ||
                         m->frames > GF_FINGERPRINT_FRAMES_MAX))
        err = GF_ERR_INVALID;
    if (err == GF_OK)
        err = counts_decode(m->builds, m->n_builds, m->other_builds, &g->builds, &builds);
    if (err == GF_OK)
        err = counts_decode(m->platforms, m->n_platforms, m->other_platforms, &g->platforms,
                            &platforms);
    if (err == GF_OK && (builds != m->count || platforms != m->count))
        err = GF_ERR_INVALID; /* every crash has one build and one platform, "" included */
    if (err == GF_OK) {
        g->count = m->count;
        g->first_seen_unix_ms = m->first_seen_unix_ms;
        g->last_seen_unix_ms = m->last_seen_unix_ms;
        g->frames = m->frames;
        g->normalized = strdup(m->normalized);
        err = g->normalized ? GF_OK : GF_ERR_NOMEM;
    }
    if (err == GF_OK)
        err = sample_set(&g->sample, m->sample_occurred_unix_ms, m->signature, m->message, m->stack,
                         m->build, m->platform, m->sample_event_id, m->sample_player_id,
                         m->sample_source_id, m->sample_source_seq);
    gamefn__v1__crash_group__free_unpacked(m, NULL);
    if (err != GF_OK)
        cr_group_fini(g);
    return err;
}
