/*
 * mirror.c — the ticket mirror (see mirror.h).
 *
 * Design notes: a chained hash table keyed by ticket id; each entry points to the
 * current mm_ref. A resync numbers its pass (generation): the initial values mark the
 * entries they mention, and at the end-of-initial-values marker every unmarked entry is
 * dropped (it was deleted or ended while the watcher was blind). Revisions only grow, so
 * an entry older than the one held is ignored (a resync re-delivers the current ones).
 * Ended tickets (ASSIGNED, CANCELLED, TIMED_OUT) leave the mirror: its size is the live
 * pool, not the bucket.
 */
#include "mirror.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"
#include "gamefn/tickets/record.h"

typedef struct entry {
    char *id;
    mm_ref *ref;
    uint64_t busy_rev;
    int64_t busy_until_ms; /* monotonic: an unanswered write does not park a ticket forever */
    int64_t last_push_ms;
    int last_reason;
    uint64_t gen;
    struct entry *next;
} entry;

struct mm_mirror {
    natsConnection *nc;
    kvStore *kv;
    const gf_mm_tables *tables;
    pthread_t thread;
    atomic_int stop;
    atomic_bool ready;

    pthread_mutex_t mu;
    entry **slots;
    size_t nslots, count;
    uint64_t gen;
    long long resyncs, updates, malformed;
};

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void ref_free(mm_ref *r)
{
    gf_ticket_free(r->rec);
    free(r);
}

/* Under mu. */
static void ref_put(mm_ref *r)
{
    if (r && --r->refs == 0)
        ref_free(r);
}

static mm_ref *ref_new(const gf_mm_tables *t, Gamefn__V1__TicketRecord *rec, uint64_t rev)
{
    size_t np = rec->n_members, ng = rec->n_pings, na = rec->n_attributes;
    mm_ref *r = calloc(1, sizeof *r + np * sizeof(gf_match_player) + ng * sizeof(gf_match_ping) +
                              na * sizeof(gf_match_attr));
    if (!r)
        return NULL;
    gf_match_player *players = (gf_match_player *)(r + 1);
    gf_match_ping *pings = (gf_match_ping *)(players + np);
    gf_match_attr *attrs = (gf_match_attr *)(pings + ng);
    r->refs = 1;
    r->rev = rev;
    r->rec = rec;
    r->engine = gf_ticket_engine(&t->cfg, rec, players, pings, attrs, &r->et);
    r->group = r->et.queue < t->cfg.queues_len ? t->queue_group[r->et.queue] : 0;
    return r;
}

static entry **find_slot(mm_mirror *m, const char *id)
{
    entry **p = &m->slots[hash(id) % m->nslots];
    while (*p && strcmp((*p)->id, id) != 0)
        p = &(*p)->next;
    return p;
}

static void grow(mm_mirror *m)
{
    size_t n = m->nslots * 2;
    entry **slots = calloc(n, sizeof *slots);
    if (!slots)
        return; /* keep the longer chains */
    for (size_t i = 0; i < m->nslots; i++) {
        for (entry *e = m->slots[i], *next; e; e = next) {
            next = e->next;
            entry **head = &slots[hash(e->id) % n];
            e->next = *head;
            *head = e;
        }
    }
    free(m->slots);
    m->slots = slots;
    m->nslots = n;
}

static void remove_at(mm_mirror *m, entry **p)
{
    entry *e = *p;
    *p = e->next;
    ref_put(e->ref);
    free(e->id);
    free(e);
    m->count--;
}

/* Applies one watcher entry (under mu). */
static void apply(mm_mirror *m, kvEntry *ke)
{
    const char *key = kvEntry_Key(ke);
    uint64_t rev = kvEntry_Revision(ke);
    entry **p = find_slot(m, key);
    m->updates++;
    if (*p && (*p)->ref->rev > rev) { /* older than what we hold */
        (*p)->gen = m->gen;
        return;
    }
    Gamefn__V1__TicketRecord *rec = NULL;
    bool live = false;
    if (kvEntry_Operation(ke) == kvOp_Put) {
        if (gf_ticket_decode((const uint8_t *)kvEntry_Value(ke), (size_t)kvEntry_ValueLen(ke), key,
                             &rec, NULL) != GF_OK)
            m->malformed++;
        else
            live = !gf_ticket_terminal(rec->state);
    }
    mm_ref *r = live ? ref_new(m->tables, rec, rev) : NULL;
    if (!r) { /* deleted, ended, malformed or out of memory: not in the pool */
        gf_ticket_free(rec);
        if (*p)
            remove_at(m, p);
        return;
    }
    if (*p) {
        if ((*p)->ref->rev == rev) { /* the same revision again (a resync) */
            ref_put(r);
            (*p)->gen = m->gen;
            return;
        }
        ref_put((*p)->ref);
        (*p)->ref = r;
        (*p)->gen = m->gen;
        return;
    }
    entry *e = calloc(1, sizeof *e);
    char *id = strdup(key);
    if (!e || !id) {
        free(e);
        free(id);
        ref_put(r);
        return;
    }
    e->id = id;
    e->ref = r;
    e->gen = m->gen;
    *p = e;
    if (++m->count > m->nslots * 2)
        grow(m);
}

/* Drops entries the current pass did not mention (under mu). */
static void sweep(mm_mirror *m)
{
    for (size_t i = 0; i < m->nslots; i++) {
        entry **p = &m->slots[i];
        while (*p) {
            if ((*p)->gen != m->gen)
                remove_at(m, p);
            else
                p = &(*p)->next;
        }
    }
}

static uint64_t reconnects(natsConnection *nc)
{
    natsStatistics *st = NULL;
    uint64_t n = 0;
    if (natsStatistics_Create(&st) == NATS_OK && natsConnection_GetStats(nc, st) == NATS_OK)
        natsStatistics_GetCounts(st, NULL, NULL, NULL, NULL, &n);
    natsStatistics_Destroy(st);
    return n;
}

/* One watcher's life: until stop, an error, or a reconnect. */
static void watch_once(mm_mirror *m)
{
    kvWatcher *w = NULL;
    uint64_t seen = reconnects(m->nc);
    if (kvStore_WatchAll(&w, m->kv, NULL) != NATS_OK) {
        gf_clock_sleep_until(gf_clock_mono_ms() + 500, &m->stop);
        return;
    }
    pthread_mutex_lock(&m->mu);
    m->gen++;
    m->resyncs++;
    pthread_mutex_unlock(&m->mu);
    while (!atomic_load(&m->stop)) {
        kvEntry *e = NULL;
        natsStatus s = kvWatcher_Next(&e, w, 250);
        if (s == NATS_TIMEOUT) {
            if (reconnects(m->nc) != seen &&
                natsConnection_Status(m->nc) == NATS_CONN_STATUS_CONNECTED) {
                gf_log_info("ticket mirror resyncs after a reconnect", NULL);
                break;
            }
            continue;
        }
        if (s != NATS_OK) {
            gf_log_warn("ticket watcher failed; re-creating it", "status=%d", (int)s);
            gf_clock_sleep_until(gf_clock_mono_ms() + 250, &m->stop);
            break;
        }
        pthread_mutex_lock(&m->mu);
        if (e)
            apply(m, e);
        else {
            sweep(m);
            if (!atomic_exchange(&m->ready, true))
                gf_log_info("ticket mirror ready", "live=%zu", m->count);
        }
        pthread_mutex_unlock(&m->mu);
        kvEntry_Destroy(e);
    }
    /* An update may be arriving (NATS-FACTS.md §4). */
    gf_kv_watcher_forget(m->nc, w, GF_SUB_FORGET_WAIT_MS);
}

static void *watch_loop(void *arg)
{
    mm_mirror *m = arg;
    while (!atomic_load(&m->stop))
        watch_once(m);
    return NULL;
}

gf_err mm_mirror_start(natsConnection *nc, kvStore *tickets, const gf_mm_tables *tables,
                       mm_mirror **out)
{
    mm_mirror *m = calloc(1, sizeof *m);
    *out = NULL;
    if (!m)
        return GF_ERR_NOMEM;
    m->nc = nc;
    m->kv = tickets;
    m->tables = tables;
    m->nslots = 1024;
    m->slots = calloc(m->nslots, sizeof *m->slots);
    pthread_mutex_init(&m->mu, NULL);
    if (!m->slots || pthread_create(&m->thread, NULL, watch_loop, m) != 0) {
        free(m->slots);
        pthread_mutex_destroy(&m->mu);
        free(m);
        return GF_ERR_NOMEM;
    }
    *out = m;
    return GF_OK;
}

void mm_mirror_stop(mm_mirror *m)
{
    if (!m)
        return;
    atomic_store(&m->stop, 1);
    pthread_join(m->thread, NULL);
    for (size_t i = 0; i < m->nslots; i++) {
        while (m->slots[i])
            remove_at(m, &m->slots[i]);
    }
    free(m->slots);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

bool mm_mirror_ready(mm_mirror *m)
{
    return atomic_load(&m->ready);
}

size_t mm_mirror_snapshot(mm_mirror *m, int group, mm_ref ***out)
{
    size_t n = 0;
    int64_t now = gf_clock_mono_ms();
    pthread_mutex_lock(&m->mu);
    *out = malloc((m->count ? m->count : 1) * sizeof **out);
    for (size_t i = 0; *out && i < m->nslots; i++) {
        for (entry *e = m->slots[i]; e; e = e->next) {
            if (e->ref->group != group || (e->busy_rev == e->ref->rev && now < e->busy_until_ms))
                continue;
            e->ref->refs++;
            (*out)[n++] = e->ref;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return n;
}

void mm_ref_release(mm_mirror *m, mm_ref **refs, size_t n)
{
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < n; i++)
        ref_put(refs[i]);
    pthread_mutex_unlock(&m->mu);
}

void mm_mirror_busy(mm_mirror *m, const char *id, uint64_t rev, int64_t for_ms)
{
    pthread_mutex_lock(&m->mu);
    entry **p = find_slot(m, id);
    if (*p) {
        (*p)->busy_rev = rev;
        (*p)->busy_until_ms = gf_clock_mono_ms() + for_ms;
    }
    pthread_mutex_unlock(&m->mu);
}

bool mm_mirror_push_due(mm_mirror *m, const char *id, int reason, int64_t now_ms,
                        int64_t interval_ms)
{
    bool due = false;
    pthread_mutex_lock(&m->mu);
    entry **p = find_slot(m, id);
    if (*p && ((*p)->last_push_ms == 0 || (*p)->last_reason != reason ||
               now_ms - (*p)->last_push_ms >= interval_ms)) {
        (*p)->last_push_ms = now_ms;
        (*p)->last_reason = reason;
        due = true;
    }
    pthread_mutex_unlock(&m->mu);
    return due;
}

void mm_mirror_stats_get(mm_mirror *m, mm_mirror_stats *out)
{
    pthread_mutex_lock(&m->mu);
    out->live = m->count;
    out->resyncs = m->resyncs;
    out->updates = m->updates;
    out->malformed = m->malformed;
    pthread_mutex_unlock(&m->mu);
}
