/*
 * The consumer framework's batch engine (runtime/consumer/engine.c) against a fake
 * store that times out, loses answers, applies writes it reports as failed and lets a
 * concurrent writer win, with a simulated runtime that crashes between effect and ack,
 * retries in place, splits at max_deliver and gives a message its last try. The
 * stream holds producer copies under the window guarantee (retries, spool replays of
 * whole unacknowledged windows), poison events, garbage, events stored under another
 * partition's subject (never applied), and then re-drives of every dead letter, twice,
 * plus re-drives of applied events and of another group's.
 * At the end every key must hold every one of its events exactly once: the effect is
 * the list of applied event ids, so a double application or a loss shows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"
#include "gamefn/effect_record.h"
#include "gamefn/limits.h"
#include "gamefn/partition.h"
#include "gamefn/util.h"
#include "gamefn/v1/event.pb-c.h"

enum { W = 8, SOURCES = 3, PLAYERS = 6, STEPS = 3000, MAXD = 3, MAX_MSGS = 20000 };

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static bool chance(uint64_t *s, unsigned percent)
{
    return rnd(s) % 100 < percent;
}

/* ---- the fake store ------------------------------------------------------------- */

typedef struct kv_entry {
    char key[GF_CONSUMER_KEY_MAX];
    uint64_t rev;
    uint8_t *data;
    size_t len;
} kv_entry;

typedef struct fake {
    kv_entry e[64];
    size_t n;
    uint64_t seq; /* the bucket's last revision */
    uint64_t rng;
    unsigned faults; /* percent, per kind */
    size_t reasons;
} fake;

static kv_entry *kv_find(fake *f, const char *key)
{
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->e[i].key, key) == 0)
            return &f->e[i];
    }
    return NULL;
}

static void kv_put(fake *f, const char *key, const uint8_t *data, size_t len)
{
    kv_entry *e = kv_find(f, key);
    if (!e) {
        assert_true(f->n < 64);
        e = &f->e[f->n++];
        snprintf(e->key, sizeof e->key, "%s", key);
    }
    uint8_t *copy = malloc(len ? len : 1);
    memcpy(copy, data, len); /* data may be e->data itself */
    free(e->data);
    e->data = copy;
    e->len = len;
    e->rev = ++f->seq;
}

static void fake_read(void *io, const char *const *keys, size_t n, gf__cread *out)
{
    fake *f = io;
    for (size_t i = 0; i < n; i++) {
        kv_entry *e = kv_find(f, keys[i]);
        if (chance(&f->rng, f->faults)) {
            out[i].err = GF_ERR_TIMEOUT;
        } else if (!e) {
            out[i].err = GF_ERR_NOT_FOUND;
        } else {
            out[i].err = GF_OK;
            out[i].rev = e->rev;
            out[i].data = malloc(e->len ? e->len : 1);
            memcpy(out[i].data, e->data, e->len);
            out[i].len = e->len;
        }
    }
}

static void fake_write(void *io, gf__cwrite *w, size_t n)
{
    fake *f = io;
    for (size_t i = 0; i < n; i++) {
        kv_entry *e = kv_find(f, w[i].key);
        if (e && chance(&f->rng, f->faults)) /* someone else wrote it: same bytes, new rev */
            kv_put(f, w[i].key, e->data, e->len);
        e = kv_find(f, w[i].key);
        uint64_t cur = e ? e->rev : 0;
        if (cur != w[i].rev) {
            w[i].err = GF_ERR_CONFLICT;
            continue;
        }
        if (chance(&f->rng, f->faults)) { /* no answer, not stored */
            w[i].err = GF_ERR_TIMEOUT;
            continue;
        }
        kv_put(f, w[i].key, w[i].data, w[i].len);
        w[i].new_rev = f->seq;
        /* stored, but the answer was lost */
        w[i].err = chance(&f->rng, f->faults) ? GF_ERR_TIMEOUT : GF_OK;
    }
}

static gf_err fake_reasons(void *io, const gf__creason *r, size_t n)
{
    fake *f = io;
    for (size_t i = 0; i < n; i++)
        assert_true(r[i].len > 0 && strncmp(r[i].key, "EVENTS.test-p00.", 16) == 0);
    if (chance(&f->rng, f->faults))
        return GF_ERR_TIMEOUT;
    f->reasons += n;
    return GF_OK;
}

static bool fake_owned(void *io)
{
    (void)io;
    return true;
}

static void fake_pause(void *io, int64_t ms)
{
    (void)io;
    (void)ms;
}

/* ---- the consumer: effect = the list of applied event ids ------------------------ */

typedef struct ids {
    char **id;
    size_t n, cap;
} ids;

typedef struct ctx {
    bool fixed;     /* poison (delta 13) applies once fixed */
    unsigned flaky; /* percent of transient apply errors */
    uint64_t rng;
} ctx;

static gf_err t_keys(void *c, const gf_consumer_event *e, gf_consumer_keys *out, char *why,
                     size_t size)
{
    (void)c;
    if (e->ev->payload_case != GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE)
        return GF_OK;
    if (strcmp(e->ev->score->board, "nope") == 0) {
        snprintf(why, size, "unknown board");
        return GF_ERR_INVALID;
    }
    snprintf(out->key[out->n++], GF_CONSUMER_KEY_MAX, "k.%s", e->ev->player_id);
    if (e->ev->score->delta % 5 == 0) /* a second key for some */
        snprintf(out->key[out->n++], GF_CONSUMER_KEY_MAX, "fives");
    return GF_OK;
}

static gf_err t_load(void *c, const char *key, const uint8_t *effect, size_t len, void **state)
{
    (void)c;
    (void)key;
    ids *s = calloc(1, sizeof *s);
    size_t at = 0;
    while (at < len) {
        const uint8_t *nl = memchr(effect + at, '\n', len - at);
        size_t l = (size_t)(nl - (effect + at));
        s->id = gf_grow(s->id, &s->cap, s->n + 1, sizeof *s->id);
        s->id[s->n] = strndup((const char *)effect + at, l);
        s->n++;
        at += l + 1;
    }
    *state = s;
    return GF_OK;
}

static gf_err t_apply(void *c, const char *key, void *state, const gf_consumer_event *e, char *why,
                      size_t size)
{
    ctx *x = c;
    (void)key;
    if (e->ev->score->delta == 13 && !x->fixed) {
        snprintf(why, size, "poison");
        return GF_ERR_PERMANENT;
    }
    if (chance(&x->rng, x->flaky)) {
        snprintf(why, size, "flaky");
        return GF_ERR_RETRY;
    }
    ids *s = state;
    s->id = gf_grow(s->id, &s->cap, s->n + 1, sizeof *s->id);
    s->id[s->n++] = strdup(e->ev->event_id);
    return GF_OK;
}

static gf_err t_store(void *c, const char *key, const void *state, uint8_t **out, size_t *len)
{
    (void)c;
    (void)key;
    const ids *s = state;
    size_t total = 0;
    for (size_t i = 0; i < s->n; i++)
        total += strlen(s->id[i]) + 1;
    *out = malloc(total ? total : 1);
    *len = 0;
    for (size_t i = 0; i < s->n; i++) {
        size_t l = strlen(s->id[i]);
        memcpy(*out + *len, s->id[i], l);
        (*out)[*len + l] = '\n';
        *len += l + 1;
    }
    return GF_OK;
}

static void t_drop(void *c, void *state)
{
    (void)c;
    ids *s = state;
    for (size_t i = 0; i < s->n; i++)
        free(s->id[i]);
    free(s->id);
    free(s);
}

static const gf_consumer_ops ops = {t_keys, t_load, t_apply, t_store, t_drop};

/* ---- the stream ------------------------------------------------------------------ */

typedef struct smsg {
    char subject[96];
    uint8_t *data;
    size_t len;
    char redrive[32]; /* "" = none */
    int src, player;  /* -1 for garbage */
    uint64_t seq;
    int64_t delta;
    bool nope;      /* board "nope": no key */
    bool misplaced; /* its subject names another partition than the player's */
} smsg;

typedef struct stream {
    smsg m[MAX_MSGS];
    size_t n;
} stream;

static void add_event(stream *st, int src, uint64_t seq, int player, int64_t delta,
                      const char *board)
{
    assert_true(st->n < MAX_MSGS);
    smsg *m = &st->m[st->n++];
    memset(m, 0, sizeof *m);
    char source[16], event_id[40], pid[16];
    snprintf(source, sizeof source, "s%d", src);
    snprintf(event_id, sizeof event_id, "s%d-%llu", src, (unsigned long long)seq);
    snprintf(pid, sizeof pid, "p%d", player);
    Gamefn__V1__ScoreEvent sc = GAMEFN__V1__SCORE_EVENT__INIT;
    sc.delta = delta;
    char board_copy[16];
    snprintf(board_copy, sizeof board_copy, "%s", board);
    sc.board = board_copy;
    Gamefn__V1__GameEvent ev = GAMEFN__V1__GAME_EVENT__INIT;
    ev.event_id = event_id;
    ev.source_id = source;
    ev.source_seq = seq;
    ev.player_id = pid;
    ev.event_type = (char *)"score";
    ev.occurred_unix_ms = 1000;
    ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE;
    ev.score = &sc;
    assert_int_equal(gf_pack(&ev.base, &m->data, &m->len), GF_OK);
    snprintf(m->subject, sizeof m->subject, "gamefn.v1.evp.%u.%s.score",
             gf_partition_of(pid, GF_WIRE_EVENT_PARTITIONS), pid);
    m->src = src;
    m->player = player;
    m->seq = seq;
    m->delta = delta;
    m->nope = strcmp(board, "nope") == 0;
}

static void add_copy(stream *st, const smsg *orig, const char *redrive)
{
    assert_true(st->n < MAX_MSGS);
    smsg *m = &st->m[st->n++];
    *m = *orig;
    m->data = malloc(orig->len ? orig->len : 1);
    memcpy(m->data, orig->data, orig->len);
    snprintf(m->redrive, sizeof m->redrive, "%s", redrive ? redrive : "");
}

/* Producers under the window guarantee: in order, a retried copy now and then, and
 * sometimes a whole unacknowledged window replayed (the spool after an outage). */
static void produce(stream *st, uint64_t *rng)
{
    uint64_t next[SOURCES] = {1, 1, 1};
    for (int step = 0; step < STEPS; step++) {
        int src = (int)(rnd(rng) % SOURCES);
        uint64_t seq = next[src]++;
        int player = (int)(rnd(rng) % PLAYERS);
        int64_t delta = chance(rng, 3) ? 13 : (int64_t)(rnd(rng) % 20) + 1;
        if (delta == 13 && !chance(rng, 50))
            delta = 14;
        add_event(st, src, seq, player, delta, chance(rng, 1) ? "nope" : "");
        if (chance(rng, 1)) { /* published straight to the wrong partition: dead-lettered */
            smsg *m = &st->m[st->n - 1];
            char pid[16];
            snprintf(pid, sizeof pid, "p%d", player);
            snprintf(m->subject, sizeof m->subject, "gamefn.v1.evp.%u.%s.score",
                     (gf_partition_of(pid, GF_WIRE_EVENT_PARTITIONS) + 1) % 16, pid);
            m->misplaced = true;
        }
        if (chance(rng, 5)) /* a retry of this one */
            add_copy(st, &st->m[st->n - 1], NULL);
        if (chance(rng, 1)) { /* garbage */
            add_copy(st, &st->m[st->n - 1], NULL);
            st->m[st->n - 1].data[0] ^= 0xff;
            st->m[st->n - 1].src = -1;
        }
        if (chance(rng, 2)) { /* acks lost for the last W - 1 of this source: replay them */
            size_t from = st->n;
            for (size_t i = 0; i < from; i++) {
                if (st->m[i].src == src && st->m[i].seq + W > next[src])
                    add_copy(st, &st->m[i], NULL);
            }
        }
    }
}

/* ---- the simulated runtime ------------------------------------------------------- */

typedef struct sim {
    gf__cengine e;
    gf__cstats stats;
    gf__cpart p;
    gf__cstore store;
    fake f;
    ctx c;
    uint64_t token;
    bool dead[MAX_MSGS];
    size_t ndead;
} sim;

static gf_err call(sim *s, const stream *st, size_t from, size_t n, unsigned attempt, bool last,
                   gf_err *verdicts)
{
    gf__cmsg msgs[32];
    for (size_t i = 0; i < n; i++) {
        const smsg *m = &st->m[from + i];
        msgs[i] = (gf__cmsg){.subject = m->subject,
                             .data = m->data,
                             .len = m->len,
                             .stream_seq = from + i + 1,
                             .num_delivered = 1,
                             .redrive = m->redrive[0] ? m->redrive : NULL};
    }
    gf__cbatch b = {.msgs = msgs,
                    .len = n,
                    .partition = 0,
                    .token = s->token,
                    .attempt = attempt,
                    .last_try = last,
                    .now_unix_ms = 5000,
                    .verdicts = verdicts};
    return gf__cengine_batch(&s->e, &s->p, &s->store, &b);
}

/* Delivers st->m[from..st->n) in batches like the runtime does. */
static void deliver(sim *s, const stream *st, size_t from, uint64_t *rng)
{
    size_t pos = from;
    while (pos < st->n) {
        size_t n = 1 + rnd(rng) % 16;
        if (n > st->n - pos)
            n = st->n - pos;
        gf_err verdicts[32];
        bool settled = false;
        for (unsigned attempt = 1; !settled; attempt++) {
            gf_err err = call(s, st, pos, n, attempt, n == 1 && attempt >= MAXD, verdicts);
            if (err == GF_OK) {
                settled = true;
            } else if (attempt >= MAXD) { /* split: a last try each */
                for (size_t i = 0; i < n; i++) {
                    err = call(s, st, pos + i, 1, attempt + 1, true, &verdicts[i]);
                    assert_int_equal(err, GF_OK); /* a last try never fails for transient */
                }
                settled = true;
            }
        }
        if (chance(rng, 10)) { /* killed after the effect, before the ack: a new owner */
            s->token++;
            gf__cpart_reset(&s->p, &s->e);
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            if (verdicts[i] != GF_OK && !s->dead[pos + i]) {
                s->dead[pos + i] = true;
                s->ndead++;
            }
        }
        pos += n;
    }
}

/* Every key holds each of its events exactly once. */
static void check(sim *s, const stream *st)
{
    for (int p = -1; p < PLAYERS; p++) {
        char key[32];
        if (p < 0)
            snprintf(key, sizeof key, "fives");
        else
            snprintf(key, sizeof key, "k.p%d", p);
        kv_entry *e = kv_find(&s->f, key);
        assert_non_null(e);
        gf_effect_record rec;
        assert_int_equal(gf_effect_record_decode(e->data, e->len, &rec), GF_OK);
        void *state = NULL;
        t_load(NULL, key, rec.effect, rec.effect_len, &state);
        ids *got = state;
        for (size_t i = 0; i < st->n; i++) { /* each distinct event of the key */
            const smsg *m = &st->m[i];
            if (m->src < 0 || (p >= 0 ? m->player != p : m->delta % 5 != 0))
                continue;
            char id[40];
            snprintf(id, sizeof id, "s%d-%llu", m->src, (unsigned long long)m->seq);
            size_t count = 0;
            bool first = true;
            for (size_t j = 0; j < i && first; j++)
                first = !(st->m[j].src == m->src && st->m[j].seq == m->seq);
            if (!first)
                continue;
            for (size_t j = 0; j < got->n; j++)
                count += strcmp(got->id[j], id) == 0;
            /* board "nope" has no key at all, a misplaced one is invalid: never applied */
            bool never = m->nope || m->misplaced;
            if (count != (never ? 0u : 1u))
                fail_msg("key %s holds event %s %zu times", key, id, count);
        }
        t_drop(NULL, state);
        gf_effect_record_fini(&rec);
    }
}

static void run_seed(uint64_t seed, unsigned faults, unsigned flaky, uint64_t cache_keys)
{
    stream *st = calloc(1, sizeof *st);
    sim *s = calloc(1, sizeof *s);
    uint64_t rng = seed;
    produce(st, &rng);
    s->f.rng = seed * 7 + 1;
    s->f.faults = faults;
    s->c = (ctx){.flaky = flaky, .rng = seed * 13 + 5};
    gf_consumer_options_default(&s->e.opts);
    s->e.opts.window = W;
    s->e.opts.cache_keys = (int64_t)cache_keys;
    s->e.opts.max_rounds = 4;
    s->e.ops = &ops;
    s->e.ctx = &s->c;
    s->e.stream = "EVENTS";
    s->e.group = "test";
    s->e.instance = "unit";
    s->e.stats = &s->stats;
    s->store = (gf__cstore){&s->f, fake_read, fake_write, fake_reasons, fake_owned, fake_pause};
    s->token = 1;
    gf__cpart_init(&s->p, 0, "test");

    deliver(s, st, 0, &rng);
    assert_true(s->ndead > 0);
    /* The poison is fixed; every dead letter is re-driven twice, plus some applied events
     * and another group's re-drives. */
    s->c.fixed = true;
    s->c.flaky = 0;
    size_t end = st->n;
    for (size_t i = 0; i < end; i++) {
        if (s->dead[i]) {
            add_copy(st, &st->m[i], "test-p00");
            add_copy(st, &st->m[i], "test-p00");
        } else if (chance(&rng, 2)) {
            add_copy(st, &st->m[i], chance(&rng, 50) ? "test-p00" : "other-p00");
        }
    }
    deliver(s, st, end, &rng);
    check(s, st);

    gf_consumer_stats stats;
    gf__cstats_get(&s->stats, &stats);
    assert_true(stats.applied > 0 && stats.duplicates > 0 && stats.redriven > 0);
    gf__cpart_fini(&s->p, &s->e);
    for (size_t i = 0; i < st->n; i++)
        free(st->m[i].data);
    for (size_t i = 0; i < s->f.n; i++)
        free(s->f.e[i].data);
    free(st);
    free(s);
}

static void exact_without_faults(void **state)
{
    (void)state;
    run_seed(1, 0, 0, 1000);
}

static void exact_with_store_faults(void **state)
{
    (void)state;
    for (uint64_t seed = 2; seed < 8; seed++)
        run_seed(seed, 5, 0, 1000);
}

static void exact_with_flaky_apply_and_no_cache(void **state)
{
    (void)state;
    for (uint64_t seed = 11; seed < 15; seed++)
        run_seed(seed, 3, 4, 0);
}

static void exact_with_a_tiny_cache(void **state)
{
    (void)state;
    run_seed(21, 3, 1, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exact_without_faults),
        cmocka_unit_test(exact_with_store_faults),
        cmocka_unit_test(exact_with_flaky_apply_and_no_cache),
        cmocka_unit_test(exact_with_a_tiny_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
