/*
 * engine.c — one batch of one partition (engine.h; the steps are gamefn/consumer.h's).
 *
 * Design notes:
 * - Grouping. Each valid event's keys are collected into one table per batch (key ->
 *   the batch indexes of its events, in stream order), so a key is read, changed and
 *   written once however many of the batch's events touch it.
 * - Rounds. Round 1 applies every key and sends every write at once; a write that loses
 *   (or whose outcome is unknown) drops that key from the cache, and the next round reads
 *   it again and re-applies its events from what is stored: the record's marks say which
 *   of them are in it already, so re-applying is exact whatever happened to the lost
 *   write. A key's results (which events it dead-lettered and why) are those of the
 *   round whose write was stored.
 * - The cache. A key's entry (revision, decoded record, the consumer's state) is kept
 *   after a successful write, so the next batch starts from it without a read. It is
 *   only ever ahead of the bucket by nothing: an entry whose state was changed but not
 *   stored (a failed round, a transient apply error, a fenced record) is dropped at once.
 *   A stale entry (another owner wrote the key meanwhile) fails its compare-and-set and is
 *   re-read. Entries are evicted after a batch when the cache is over options.cache_keys,
 *   least recently used first; a new tenure starts empty.
 * - Dead letters. A keyed event dies only through a stored dead mark: the engine never
 *   returns GF_OK with a PERMANENT verdict unless every key of that event that did not
 *   apply it holds its mark in a stored record. Events without a key (invalid, or keys()
 *   refused) die without one: nothing of them was ever applied (docs/EVENTS.md).
 */
#include "engine.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/event_check.h"
#include "gamefn/log.h"
#include "gamefn/names.h"
#include "gamefn/util.h"
#include "gamefn/v1/dlq.pb-c.h"

enum {
    REASON_MAX = 256, /* DeadLetter.error */
    PAUSE_MIN_MS = 10,
    PAUSE_MAX_MS = 1000,
};

typedef struct item {
    Gamefn__V1__GameEvent *ev; /* NULL: invalid or skipped */
    gf_consumer_event ce;
    uint32_t kix[GF_CONSUMER_KEYS_MAX];
    uint8_t nkeys;
    gf_err verdict;
    char *reason; /* malloc'd, for a dead message */
} item;

typedef struct bkey {
    char *key;
    uint32_t *items; /* batch indexes, in stream order */
    char **why;      /* per items[j]: the dead reason of the stored round, or NULL */
    size_t n, cap;
    gf__centry *entry; /* in the cache while loaded */
    bool done;
} bkey;

typedef struct run {
    const gf__cengine *e;
    gf__cpart *p;
    const gf__cstore *s;
    const gf__cbatch *b;
    item *items;
    bkey *keys;
    size_t nkeys, keys_cap;
    gf__strmap index; /* key -> bkey index + 1 */
} run;

#define STAT_ADD(e, field, v) atomic_fetch_add(&(e)->stats->field, (uint64_t)(v))

/* ---- cache ---------------------------------------------------------------------- */

static void entry_free(const gf__cengine *e, gf__centry *en)
{
    if (!en)
        return;
    if (en->state)
        e->ops->drop(e->ctx, en->state);
    gf_effect_record_fini(&en->rec);
    free(en->key);
    free(en);
}

static void cache_drop(run *r, bkey *k)
{
    if (!k->entry)
        return;
    gf__strmap_del(&r->p->cache, k->key);
    entry_free(r->e, k->entry);
    k->entry = NULL;
}

void gf__cpart_init(gf__cpart *p, unsigned partition, const char *group)
{
    memset(p, 0, sizeof *p);
    p->partition = partition;
    snprintf(p->durable, sizeof p->durable, "%s-p%02u", group, partition);
}

void gf__cpart_reset(gf__cpart *p, const gf__cengine *e)
{
    for (size_t i = 0; i < p->cache.cap; i++) {
        if (p->cache.slots[i].key)
            entry_free(e, p->cache.slots[i].value);
    }
    gf__strmap_clear(&p->cache);
}

void gf__cpart_fini(gf__cpart *p, const gf__cengine *e)
{
    gf__cpart_reset(p, e);
    gf__strmap_fini(&p->cache);
}

static int used_cmp(const void *a, const void *b)
{
    uint64_t x = (*(gf__centry *const *)a)->used, y = (*(gf__centry *const *)b)->used;
    return x < y ? -1 : x > y;
}

/* Over the bound: evict the least recently used down to 3/4 of it (0: everything). */
static void cache_trim(gf__cpart *p, const gf__cengine *e)
{
    size_t cap = (size_t)e->opts.cache_keys;
    if (p->cache.n <= cap)
        return;
    if (cap == 0) {
        gf__cpart_reset(p, e);
        return;
    }
    gf__centry **all = malloc(p->cache.n * sizeof *all);
    if (!all) {
        gf__cpart_reset(p, e);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < p->cache.cap; i++) {
        if (p->cache.slots[i].key)
            all[n++] = p->cache.slots[i].value;
    }
    qsort(all, n, sizeof *all, used_cmp);
    for (size_t i = 0; i < n - cap * 3 / 4; i++) {
        gf__strmap_del(&p->cache, all[i]->key);
        entry_free(e, all[i]);
    }
    free(all);
}

/* ---- planning: validate, keys, grouping ----------------------------------------- */

/* reason: "<prefix><text>", cut to the DeadLetter's limit. */
static void set_reason(item *it, gf_err verdict, const char *prefix, const char *text)
{
    char buf[REASON_MAX];
    if (snprintf(buf, sizeof buf, "%s%s", prefix, text) >= (int)sizeof buf)
        gf_log_debug("dead-letter reason cut", "len=%zu", strlen(prefix) + strlen(text));
    free(it->reason);
    it->reason = strdup(buf);
    it->verdict = verdict;
}

/* Re-drives name the durable that dead-lettered them: "<group>-pNN". */
static bool redrive_for_us(const char *value, const char *group)
{
    size_t g = strlen(group);
    if (strncmp(value, group, g) != 0 || value[g] != '-' || value[g + 1] != 'p')
        return false;
    const char *d = value + g + 2;
    if (!*d)
        return false;
    for (; *d; d++) {
        if (*d < '0' || *d > '9')
            return false;
    }
    return true;
}

static gf_err key_index(run *r, const char *key, uint32_t *out)
{
    uintptr_t found = (uintptr_t)gf__strmap_get(&r->index, key);
    if (found) {
        *out = (uint32_t)(found - 1);
        return GF_OK;
    }
    bkey *keys = gf_grow(r->keys, &r->keys_cap, r->nkeys + 1, sizeof *keys);
    if (!keys)
        return GF_ERR_NOMEM;
    r->keys = keys;
    bkey *k = &r->keys[r->nkeys];
    memset(k, 0, sizeof *k);
    if (!(k->key = strdup(key)))
        return GF_ERR_NOMEM;
    gf_err err = gf__strmap_put(&r->index, k->key, (void *)(uintptr_t)(r->nkeys + 1));
    if (err != GF_OK) {
        free(k->key);
        return err;
    }
    *out = (uint32_t)r->nkeys++;
    return GF_OK;
}

static gf_err key_add_item(bkey *k, uint32_t index)
{
    if (k->n > 0 && k->items[k->n - 1] == index)
        return GF_OK; /* keys() named the key twice */
    uint32_t *items = gf_grow(k->items, &k->cap, k->n + 1, sizeof *items);
    if (!items)
        return GF_ERR_NOMEM;
    k->items = items;
    k->items[k->n++] = index;
    return GF_OK;
}

static gf_err plan_one(run *r, size_t i)
{
    const gf__cmsg *m = &r->b->msgs[i];
    item *it = &r->items[i];
    gf_event_problem problem;
    char why[GF_CONSUMER_WHY_MAX] = "";
    /* The body, then the stored subject against it (player, type and partition tokens):
     * gamefn/event_check.h's rules, the ones every reader of EVENTS applies. */
    gf_err invalid = gf_event_decode(m->data, m->len, &it->ev, &problem);
    if (invalid == GF_OK)
        invalid = gf_event_check_subject(m->subject, it->ev, &problem);
    if (invalid != GF_OK) {
        char text[REASON_MAX];
        gf_event_problem_format(&problem, text, sizeof text);
        set_reason(it, GF_ERR_INVALID, "invalid event: ", text);
        return GF_OK;
    }
    STAT_ADD(r->e, events, 1);
    if (m->redrive) {
        if (!redrive_for_us(m->redrive, r->e->group)) {
            STAT_ADD(r->e, ignored, 1); /* another group's dead letter: not ours to apply */
            return GF_OK;
        }
        STAT_ADD(r->e, redriven, 1);
    }
    it->ce = (gf_consumer_event){.ev = it->ev,
                                 .subject = m->subject,
                                 .stream_seq = m->stream_seq,
                                 .stored_unix_ms = m->stored_unix_ms,
                                 .partition = r->b->partition,
                                 .redriven = m->redrive != NULL};
    gf_consumer_keys keys = {0};
    gf_err err = r->e->ops->keys(r->e->ctx, &it->ce, &keys, why, sizeof why);
    if (err != GF_OK || keys.n > GF_CONSUMER_KEYS_MAX) {
        set_reason(it, GF_ERR_PERMANENT, "", why[0] ? why : "the consumer refused the event");
        return GF_OK;
    }
    if (keys.n == 0)
        STAT_ADD(r->e, ignored, 1);
    for (size_t k = 0; k < keys.n; k++) {
        char kwhy[GF_NAME_WHY_MAX];
        keys.key[k][GF_CONSUMER_KEY_MAX - 1] = '\0';
        if (!gf_name_kv_key_ok(keys.key[k], kwhy, sizeof kwhy)) {
            gf_log_error("consumer named an invalid effect key",
                         "group=%s key=\"%.80s\" why=\"%s\"", r->e->group, keys.key[k], kwhy);
            set_reason(it, GF_ERR_PERMANENT, "effect key ", kwhy);
            it->nkeys = 0;
            return GF_OK;
        }
        uint32_t ix;
        if ((err = key_index(r, keys.key[k], &ix)) != GF_OK)
            return err;
        it->kix[it->nkeys++] = ix;
    }
    return GF_OK;
}

static gf_err plan(run *r)
{
    for (size_t i = 0; i < r->b->len; i++) {
        gf_err err = plan_one(r, i);
        if (err != GF_OK)
            return err;
    }
    /* Per key, its events in stream order (the batch is in stream order). */
    for (size_t i = 0; i < r->b->len; i++) {
        for (uint8_t k = 0; k < r->items[i].nkeys; k++) {
            gf_err err = key_add_item(&r->keys[r->items[i].kix[k]], (uint32_t)i);
            if (err != GF_OK)
                return err;
        }
    }
    for (size_t k = 0; k < r->nkeys; k++) {
        if (!(r->keys[k].why = calloc(r->keys[k].n, sizeof(char *))))
            return GF_ERR_NOMEM;
    }
    return GF_OK;
}

/* ---- loading -------------------------------------------------------------------- */

static void key_results_clear(bkey *k)
{
    for (size_t j = 0; j < k->n; j++) {
        free(k->why[j]);
        k->why[j] = NULL;
    }
}

/* Every event of a key whose record cannot be read dies with this reason (no mark:
 * the record cannot be written either). */
static void key_unreadable(run *r, bkey *k, const char *what)
{
    char buf[REASON_MAX];
    snprintf(buf, sizeof buf, "effect key %.120s: %s", k->key, what);
    gf_log_error("effect record unreadable: its events are dead-lettered",
                 "group=%s key=\"%s\" why=\"%s\"", r->e->group, k->key, what);
    for (size_t j = 0; j < k->n; j++) {
        free(k->why[j]);
        k->why[j] = strdup(buf);
    }
    k->done = true;
}

static gf_err entry_load(run *r, bkey *k, const gf__cread *rd)
{
    gf__centry *en = calloc(1, sizeof *en);
    if (!en || !(en->key = strdup(k->key))) {
        free(en);
        return GF_ERR_NOMEM;
    }
    gf_err err;
    if (rd->err == GF_OK) {
        en->rev = rd->rev;
        if (gf_effect_record_decode(rd->data, rd->len, &en->rec) != GF_OK) {
            entry_free(r->e, en);
            key_unreadable(r, k, "stored record is not an EffectRecord");
            return GF_OK;
        }
    } else if ((err = gf_effect_record_init(&en->rec, (uint32_t)r->e->opts.window)) != GF_OK) {
        entry_free(r->e, en);
        return err;
    }
    err = r->e->ops->load(r->e->ctx, k->key, en->rec.effect, en->rec.effect_len, &en->state);
    if (err != GF_OK) {
        entry_free(r->e, en);
        if (err == GF_ERR_NOMEM)
            return err;
        key_unreadable(r, k, "stored effect unreadable by the consumer");
        return GF_OK;
    }
    if ((err = gf__strmap_put(&r->p->cache, en->key, en)) != GF_OK) {
        entry_free(r->e, en);
        return err;
    }
    k->entry = en;
    return GF_OK;
}

/* Finds every pending key in the cache or reads it. A transient read error fails. */
static gf_err load(run *r)
{
    size_t n = 0;
    const char **names = malloc((r->nkeys ? r->nkeys : 1) * sizeof *names);
    bkey **which = malloc((r->nkeys ? r->nkeys : 1) * sizeof *which);
    gf__cread *reads = NULL;
    gf_err err = names && which ? GF_OK : GF_ERR_NOMEM;
    for (size_t i = 0; err == GF_OK && i < r->nkeys; i++) {
        bkey *k = &r->keys[i];
        if (k->done || k->entry)
            continue;
        if ((k->entry = gf__strmap_get(&r->p->cache, k->key)) == NULL) {
            names[n] = k->key;
            which[n++] = k;
        }
    }
    if (err == GF_OK && n > 0) {
        if (!(reads = calloc(n, sizeof *reads)))
            err = GF_ERR_NOMEM;
        else
            r->s->read(r->s->io, names, n, reads);
        STAT_ADD(r->e, reads, n);
    }
    for (size_t i = 0; err == GF_OK && i < n; i++) {
        if (reads[i].err != GF_OK && reads[i].err != GF_ERR_NOT_FOUND)
            err = reads[i].err == GF_ERR_NOMEM ? GF_ERR_NOMEM : GF_ERR_RETRY;
        else
            err = entry_load(r, which[i], &reads[i]);
    }
    for (size_t i = 0; reads && i < n; i++)
        free(reads[i].data);
    free(reads);
    free(names);
    free(which);
    return err;
}

/* ---- applying ------------------------------------------------------------------- */

/* The key's reason for killing items[j]: "<a><b><c>". */
static void reason_dup(bkey *k, size_t j, const char *a, const char *b, const char *c)
{
    char buf[REASON_MAX];
    if (snprintf(buf, sizeof buf, "%s%s%s", a, b, c) >= (int)sizeof buf)
        gf_log_debug("dead-letter reason cut", "len=%zu", strlen(a) + strlen(b) + strlen(c));
    free(k->why[j]);
    k->why[j] = strdup(buf);
}

/* Applies the key's events that its record does not hold. *dirty: something to write.
 * A transient apply error or a fenced record fails (the entry must then be dropped). */
static gf_err apply_key(run *r, bkey *k, bool *dirty)
{
    gf__centry *en = k->entry;
    const gf__cbatch *b = r->b;
    *dirty = false;
    if (en->rec.owner_token > b->token) {
        gf_log_warn("effect key written by a newer partition owner: stopping this batch",
                    "group=%s partition=%u key=\"%s\" token=%" PRIu64 " stored_token=%" PRIu64,
                    r->e->group, b->partition, k->key, b->token, en->rec.owner_token);
        return GF_ERR_CONFLICT;
    }
    key_results_clear(k);
    for (size_t j = 0; j < k->n; j++) {
        item *it = &r->items[k->items[j]];
        const char *src = it->ev->source_id;
        uint64_t seq = it->ev->source_seq;
        bool applied = false;
        gf_err err = gf_effect_record_applied(&en->rec, src, seq, &applied);
        if (err != GF_OK)
            return err;
        if (applied) {
            STAT_ADD(r->e, duplicates, 1);
            continue;
        }
        char why[GF_CONSUMER_WHY_MAX] = "";
        err = r->e->ops->apply(r->e->ctx, k->key, en->state, &it->ce, why, sizeof why);
        if (err == GF_OK) {
            if ((err = gf_effect_record_mark_applied(&en->rec, src, seq, b->now_unix_ms)) != GF_OK)
                return err;
            STAT_ADD(r->e, applied, 1);
            *dirty = true;
            continue;
        }
        bool permanent = err == GF_ERR_INVALID || err == GF_ERR_PERMANENT;
        if (!permanent && !b->last_try)
            return err == GF_ERR_NOMEM ? err : GF_ERR_RETRY;
        bool lost = false;
        gf_err merr = gf_effect_record_mark_dead(&en->rec, src, seq, b->now_unix_ms, &lost);
        if (merr != GF_OK)
            return merr;
        if (lost) {
            STAT_ADD(r->e, marks_lost, 1);
            gf_log_warn("too many dead marks on one key: the oldest was dropped",
                        "group=%s key=\"%s\"", r->e->group, k->key);
        }
        const char *text = why[0] ? why : gf_err_str(err);
        if (permanent)
            reason_dup(k, j, why[0] ? "" : "refused by the consumer: ", text, "");
        else
            reason_dup(k, j, "gave up at max_deliver: ", why[0] ? "" : "transient error ", text);
        *dirty = true;
    }
    return GF_OK;
}

/* The record to write: the marks' horizons applied, this owner's token, the effect. */
static gf_err encode_key(run *r, bkey *k, gf__cwrite *w)
{
    gf__centry *en = k->entry;
    int64_t now = r->b->now_unix_ms;
    gf_effect_record_prune(&en->rec, now - r->e->opts.dedup_horizon_ms,
                           now - r->e->opts.dead_horizon_ms, NULL, NULL);
    en->rec.owner_token = r->b->token;
    en->rec.updated_unix_ms = now;
    uint8_t *effect = NULL;
    size_t elen = 0;
    gf_err err = r->e->ops->store(r->e->ctx, k->key, en->state, &effect, &elen);
    if (err == GF_OK)
        err = gf_effect_record_set_effect(&en->rec, effect, elen);
    free(effect);
    uint8_t *data = NULL;
    size_t len = 0;
    if (err == GF_OK)
        err = gf_effect_record_encode(&en->rec, &data, &len);
    *w = (gf__cwrite){.key = k->key, .rev = en->rev, .data = data, .len = len};
    return err;
}

/* Drops the entries of every key not yet stored (their state may be ahead). */
static void drop_unstored(run *r)
{
    for (size_t i = 0; i < r->nkeys; i++) {
        if (!r->keys[i].done)
            cache_drop(r, &r->keys[i]);
    }
}

/* One round: apply every pending key, write the changed ones. *pending: keys left. */
static gf_err round_once(run *r, size_t *pending)
{
    gf__cwrite *writes = calloc(r->nkeys ? r->nkeys : 1, sizeof *writes);
    bkey **which = calloc(r->nkeys ? r->nkeys : 1, sizeof *which);
    size_t n = 0;
    gf_err err = writes && which ? GF_OK : GF_ERR_NOMEM;
    for (size_t i = 0; err == GF_OK && i < r->nkeys; i++) {
        bkey *k = &r->keys[i];
        if (k->done)
            continue;
        k->entry->used = r->p->batches;
        bool dirty = false;
        if ((err = apply_key(r, k, &dirty)) != GF_OK)
            break;
        if (!dirty) {
            k->done = true;
            continue;
        }
        which[n] = k;
        err = encode_key(r, k, &writes[n]);
        n++;
    }
    if (err == GF_OK && n > 0) {
        r->s->write(r->s->io, writes, n);
        STAT_ADD(r->e, writes, n);
    }
    *pending = 0;
    for (size_t i = 0; err == GF_OK && i < n; i++) {
        if (writes[i].err == GF_OK) {
            which[i]->entry->rev = writes[i].new_rev;
            which[i]->done = true;
        } else {
            STAT_ADD(r->e, conflicts, 1);
            cache_drop(r, which[i]); /* read it again: lost, or unknown */
            (*pending)++;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(writes[i].data);
    free(writes);
    free(which);
    return err;
}

static gf_err rounds(run *r)
{
    size_t pending = r->nkeys;
    for (int64_t round = 0; pending > 0; round++) {
        if (round >= r->e->opts.max_rounds)
            return GF_ERR_RETRY;
        if (round > 0) {
            int64_t ms = PAUSE_MIN_MS << (round < 7 ? round : 7);
            r->s->pause(r->s->io, ms < PAUSE_MAX_MS ? ms : PAUSE_MAX_MS);
        }
        gf_err err = load(r);
        if (err == GF_OK)
            err = round_once(r, &pending);
        if (err != GF_OK)
            return err;
    }
    return GF_OK;
}

/* ---- verdicts and reasons ------------------------------------------------------- */

static void verdicts(run *r)
{
    for (size_t k = 0; k < r->nkeys; k++) {
        const bkey *key = &r->keys[k];
        for (size_t j = 0; j < key->n; j++) {
            item *it = &r->items[key->items[j]];
            if (key->why[j] && it->verdict == GF_OK)
                set_reason(it, GF_ERR_PERMANENT, "", key->why[j]);
        }
    }
    for (size_t i = 0; i < r->b->len; i++)
        r->b->verdicts[i] = r->items[i].verdict;
}

static gf_err reasons(run *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->b->len; i++)
        n += r->items[i].verdict != GF_OK;
    if (n == 0)
        return GF_OK;
    gf__creason *rs = calloc(n, sizeof *rs);
    gf_err err = rs ? GF_OK : GF_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; err == GF_OK && i < r->b->len; i++) {
        const item *it = &r->items[i];
        const gf__cmsg *m = &r->b->msgs[i];
        if (it->verdict == GF_OK)
            continue;
        Gamefn__V1__DeadReason dr = GAMEFN__V1__DEAD_REASON__INIT;
        dr.error = it->reason ? it->reason : (char *)"dead-lettered";
        uint64_t attempts = m->num_delivered + r->b->attempt - 1;
        dr.attempts = (uint32_t)(attempts > UINT32_MAX ? UINT32_MAX : attempts);
        dr.dead_unix_ms = r->b->now_unix_ms;
        char instance[GF_CONSUMER_WHY_MAX];
        snprintf(instance, sizeof instance, "%s", r->e->instance ? r->e->instance : "");
        dr.instance = instance;
        snprintf(rs[k].key, sizeof rs[k].key, "%s.%s.%" PRIu64, r->e->stream, r->p->durable,
                 m->stream_seq);
        snprintf(rs[k].msg_id, sizeof rs[k].msg_id, "reason-%s-%s-%" PRIu64, r->e->stream,
                 r->p->durable, m->stream_seq);
        err = gf_pack(&dr.base, &rs[k].data, &rs[k].len);
        k++;
        gf_log_warn("event dead-lettered", "group=%s partition=%u seq=%" PRIu64 " why=\"%s\"",
                    r->e->group, r->b->partition, m->stream_seq, dr.error);
    }
    if (err == GF_OK)
        err = r->s->reasons(r->s->io, rs, n);
    for (size_t i = 0; rs && i < n; i++)
        free(rs[i].data);
    free(rs);
    if (err == GF_OK)
        STAT_ADD(r->e, dead, n);
    return err;
}

/* ---- the batch ------------------------------------------------------------------ */

static void run_fini(run *r)
{
    for (size_t i = 0; i < r->b->len && r->items; i++) {
        gf_event_free(r->items[i].ev);
        free(r->items[i].reason);
    }
    for (size_t k = 0; k < r->nkeys; k++) {
        key_results_clear(&r->keys[k]);
        free(r->keys[k].why);
        free(r->keys[k].items);
        free(r->keys[k].key);
    }
    free(r->keys);
    free(r->items);
    gf__strmap_fini(&r->index);
}

static gf_err attempt(const gf__cengine *e, gf__cpart *p, const gf__cstore *s, const gf__cbatch *b)
{
    run r = {.e = e, .p = p, .s = s, .b = b};
    p->batches++;
    gf_err err = (r.items = calloc(b->len ? b->len : 1, sizeof *r.items)) ? plan(&r) : GF_ERR_NOMEM;
    if (err == GF_OK)
        err = rounds(&r);
    if (err == GF_OK) {
        verdicts(&r);
        err = reasons(&r);
    }
    drop_unstored(&r);
    run_fini(&r);
    cache_trim(p, e);
    return err;
}

gf_err gf__cengine_batch(const gf__cengine *e, gf__cpart *p, const gf__cstore *s,
                         const gf__cbatch *b)
{
    STAT_ADD(e, batches, 1);
    for (int64_t pause = PAUSE_MIN_MS * 10;; pause = pause * 2 < 5000 ? pause * 2 : 5000) {
        for (size_t i = 0; i < b->len; i++)
            b->verdicts[i] = GF_OK;
        gf_err err = attempt(e, p, s, b);
        if (err == GF_OK)
            return GF_OK;
        STAT_ADD(e, retries, 1);
        /* A message's last try: it may only die with its dead marks stored, so a store that
         * is unreachable (or a newer owner's record) is waited out while we own it. */
        if (!b->last_try || err == GF_ERR_NOMEM || !s->owned(s->io))
            return err;
        gf_log_warn("last try of a message failed on a transient error: waiting for the store",
                    "group=%s partition=%u seq=%" PRIu64 " err=%s", e->group, b->partition,
                    b->msgs[0].stream_seq, gf_err_str(err));
        s->pause(s->io, pause);
    }
}

void gf__cstats_get(const gf__cstats *s, gf_consumer_stats *out)
{
    *out = (gf_consumer_stats){
        .batches = atomic_load(&s->batches),
        .events = atomic_load(&s->events),
        .applied = atomic_load(&s->applied),
        .duplicates = atomic_load(&s->duplicates),
        .ignored = atomic_load(&s->ignored),
        .dead = atomic_load(&s->dead),
        .redriven = atomic_load(&s->redriven),
        .reads = atomic_load(&s->reads),
        .writes = atomic_load(&s->writes),
        .conflicts = atomic_load(&s->conflicts),
        .retries = atomic_load(&s->retries),
        .marks_lost = atomic_load(&s->marks_lost),
    };
}
