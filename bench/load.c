/*
 * load.c — see load.h.
 */
#include "load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/subjects.h"
#include "gamefn/tickets/request.h"
#include "gamefn/v1/ticket.pb-c.h"
#include "population.h"

enum { BATCH = 1024, LAT_MAX = 4000000 };

double gf_load_now(void)
{
    return (double)gf_clock_mono_ns() / 1e9;
}

int gf_load_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double gf_load_pct(const double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    long long i = (long long)ceil(q * (double)n) - 1;
    return v[i < 0 ? 0 : ((size_t)i >= n ? n - 1 : (size_t)i)];
}

/* ---- the table ------------------------------------------------------------------ */

int gf_load_table_init(gf_load_table *t, int bits)
{
    memset(t, 0, sizeof *t);
    t->mask = ((size_t)1 << bits) - 1;
    t->s = calloc(t->mask + 1, sizeof *t->s);
    if (!t->s)
        return -1;
    pthread_mutex_init(&t->mu, NULL);
    return 0;
}

void gf_load_table_fini(gf_load_table *t)
{
    if (!t->s)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t->s);
    t->s = NULL;
}

static uint64_t id_key(const char *id)
{
    uint64_t k = 0;
    for (int i = 0; i < 16 && id[i]; i++) {
        char c = id[i];
        k = k << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    return k ? k : 1;
}

gf_load_entry *gf_load_table_at(gf_load_table *t, const char *id)
{
    uint64_t k = id_key(id);
    for (size_t i = k & t->mask;; i = (i + 1) & t->mask) {
        if (t->s[i].key == k || t->s[i].key == 0) {
            t->s[i].key = k;
            return &t->s[i];
        }
    }
}

void gf_load_on_status(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    gf_load_table *t = closure;
    Gamefn__V1__TicketStatus *st = gamefn__v1__ticket_status__unpack(
        NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
    double now = gf_load_now();
    pthread_mutex_lock(&t->mu);
    t->pushes++;
    if (st && (st->state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_CLAIMED ||
               st->state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED)) {
        gf_load_entry *e = gf_load_table_at(t, st->ticket_id);
        if (st->state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_CLAIMED && e->assigned == 0) {
            if (e->claimed == 0) {
                e->claimed = now;
                t->claimed_pushes++;
            }
            e->claimed_last = now;
        } else if (st->state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED &&
                   e->assigned == 0) {
            e->assigned = now;
            t->assigned_pushes++;
        }
    }
    pthread_mutex_unlock(&t->mu);
    gamefn__v1__ticket_status__free_unpacked(st, NULL);
    natsMsg_Destroy(m);
}

int gf_load_watch_status(const char *url, gf_load_table *t, natsConnection **nc,
                         natsSubscription **sub)
{
    natsStatus s = natsConnection_ConnectTo(nc, url);
    if (s == NATS_OK)
        s = natsConnection_Subscribe(sub, *nc, GF_WIRE_SUBJ_TICKET_STATUS ".>", gf_load_on_status,
                                     t);
    if (s == NATS_OK)
        s = natsSubscription_SetPendingLimits(*sub, -1, -1);
    if (s == NATS_OK)
        s = natsConnection_Flush(*nc);
    if (s == NATS_OK)
        return 0;
    fprintf(stderr, "load: cannot watch %s.> on %s: %s\n", GF_WIRE_SUBJ_TICKET_STATUS, url,
            natsStatus_GetText(s));
    return -1;
}

/* ---- one client ------------------------------------------------------------------- */

typedef struct client {
    const gf_load_opts *o;
    gf_load_table *t;
    int index;
    double t_end;
    long long sent, ok, errors, timeouts;
    double *lat_us;
    long long nlat;
    bool connected;
} client;

/* Population tickets, a batch per party size, each used once. */
typedef struct source {
    gf_pop_batch *batch[GF_POP_MAX_PARTY];
    size_t used[GF_POP_MAX_PARTY];
    uint64_t generated[GF_POP_MAX_PARTY]; /* batches made, per party size */
    uint64_t serial;
} source;

/* One population ticket as a CreateTicketRequest into buf; its key into key. */
static size_t pack_ticket(const client *c, const gf_match_ticket *pt, uint64_t serial,
                          const char *queue, char *key, size_t key_size, uint8_t *buf)
{
    size_t ndc = 0;
    const gf_match_dc *dcs = gf_pop_datacenters(&ndc);
    Gamefn__V1__PartyMember m[GF_POP_MAX_PARTY], *mp[GF_POP_MAX_PARTY];
    Gamefn__V1__DatacenterPing p[GF_MATCH_MAX_DCS], *pp[GF_MATCH_MAX_DCS];
    snprintf(key, key_size, "c%d-%llu", c->index, (unsigned long long)serial);
    for (size_t i = 0; i < pt->players_len; i++) {
        m[i] = (Gamefn__V1__PartyMember)GAMEFN__V1__PARTY_MEMBER__INIT;
        m[i].player_id = (char *)(uintptr_t)pt->players[i].id;
        m[i].rating = pt->players[i].skill;
        m[i].sigma = pt->players[i].sigma;
        mp[i] = &m[i];
    }
    for (size_t i = 0; i < pt->pings_len; i++) {
        p[i] = (Gamefn__V1__DatacenterPing)GAMEFN__V1__DATACENTER_PING__INIT;
        p[i].datacenter = (char *)(uintptr_t)dcs[pt->pings[i].dc].name;
        p[i].ping_ms = (uint32_t)ceil(pt->pings[i].ms);
        pp[i] = &p[i];
    }
    Gamefn__V1__CreateTicketRequest r = GAMEFN__V1__CREATE_TICKET_REQUEST__INIT;
    r.idempotency_key = key;
    r.queue = (char *)(uintptr_t)queue;
    r.n_members = pt->players_len;
    r.members = mp;
    r.n_pings = pt->pings_len;
    r.pings = pp;
    return gamefn__v1__create_ticket_request__pack(&r, buf);
}

static size_t next_request(const client *c, source *src, char *key, size_t key_size, uint8_t *buf)
{
    const gf_load_opts *o = c->o;
    size_t q = (size_t)(src->serial % o->nqueues);
    uint32_t party = o->team_size[q] < GF_POP_MAX_PARTY ? o->team_size[q] : GF_POP_MAX_PARTY;
    int bi = (int)(party - 1);
    if (!src->batch[bi] || src->used[bi] == BATCH) {
        int64_t times[BATCH] = {0};
        gf_pop_params pp = {.max_party = party};
        gf_pop_batch_free(src->batch[bi]);
        src->batch[bi] = NULL;
        /* Disjoint serial ranges per client and party size: players never repeat. */
        uint64_t first =
            ((uint64_t)c->index << 48) | ((uint64_t)bi << 44) | (src->generated[bi]++ * BATCH);
        gf_pop_generate(o->seed ? o->seed : 0x5eed, &pp, 0, first, times, BATCH, &src->batch[bi]);
        src->used[bi] = 0;
    }
    const gf_match_ticket *pt = &src->batch[bi]->tickets[src->used[bi]++];
    return pack_ticket(c, pt, src->serial++, o->queues[q], key, key_size, buf);
}

static void *client_run(void *arg)
{
    client *c = arg;
    const gf_load_opts *o = c->o;
    natsConnection *nc = NULL;
    natsOptions *opts = NULL;
    natsSubscription *sub = NULL;
    source src = {0};
    char prefix[64], subj[96], key[48], id[40];
    double sent_at[GF_LOAD_MAX_WINDOW];
    uint8_t buf[4096];
    natsOptions_Create(&opts);
    natsOptions_SetURL(opts, o->url);
    natsOptions_SetSendAsap(opts, true);
    natsStatus s = natsConnection_Connect(&nc, opts);
    natsOptions_Destroy(opts);
    if (s != NATS_OK)
        return NULL;
    c->connected = true;
    snprintf(prefix, sizeof prefix, "_INBOX.load%d", c->index);
    snprintf(subj, sizeof subj, "%s.*", prefix);
    natsConnection_SubscribeSync(&sub, nc, subj);
    natsSubscription_SetPendingLimits(sub, -1, -1);
    double per_client = o->rate > 0 ? o->rate / o->clients : 0, t0 = gf_load_now();
    int outstanding = 0, window = o->in_flight;
    for (;;) {
        double now = gf_load_now();
        /* Send while the window and the pace allow. */
        while (outstanding < window && now < c->t_end &&
               (per_client == 0 || (double)c->sent < (now - t0) * per_client)) {
            int slot = (int)(c->sent % window);
            snprintf(subj, sizeof subj, "%s.%d", prefix, slot);
            size_t len = next_request(c, &src, key, sizeof key, buf);
            gf_tickets_id(key, id);
            sent_at[slot] = gf_load_now();
            pthread_mutex_lock(&c->t->mu);
            gf_load_table_at(c->t, id)->submitted = sent_at[slot];
            pthread_mutex_unlock(&c->t->mu);
            natsConnection_PublishRequest(nc, "gamefn.v1.ticket.create", subj, buf, (int)len);
            c->sent++;
            outstanding++;
        }
        if (outstanding == 0 && now >= c->t_end)
            break;
        natsMsg *m = NULL;
        s = natsSubscription_NextMsg(&m, sub, outstanding ? 5000 : 1);
        if (s == NATS_TIMEOUT && outstanding == 0)
            continue;
        if (s != NATS_OK) {
            c->timeouts += outstanding;
            break;
        }
        int slot = atoi(strrchr(natsMsg_GetSubject(m), '.') + 1);
        const char *code = NULL;
        double t = gf_load_now();
        if (natsMsgHeader_Get(m, "Nats-Service-Error-Code", &code) == NATS_OK) {
            c->errors++;
        } else {
            Gamefn__V1__CreateTicketReply *r = gamefn__v1__create_ticket_reply__unpack(
                NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
            if (r) {
                pthread_mutex_lock(&c->t->mu);
                gf_load_table_at(c->t, r->ticket_id)->created = t;
                pthread_mutex_unlock(&c->t->mu);
                gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
            }
            c->ok++;
            if (slot >= 0 && slot < window && c->nlat < LAT_MAX)
                c->lat_us[c->nlat++] = (t - sent_at[slot]) * 1e6;
        }
        natsMsg_Destroy(m);
        outstanding--;
    }
    for (int i = 0; i < GF_POP_MAX_PARTY; i++)
        gf_pop_batch_free(src.batch[i]);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    return NULL;
}

int gf_load_run(const gf_load_opts *o, gf_load_table *t, gf_load_result *out)
{
    client cs[GF_LOAD_MAX_CLIENTS];
    pthread_t th[GF_LOAD_MAX_CLIENTS];
    int n = o->clients < GF_LOAD_MAX_CLIENTS ? o->clients : GF_LOAD_MAX_CLIENTS;
    memset(out, 0, sizeof *out);
    double t0 = gf_load_now();
    for (int i = 0; i < n; i++) {
        cs[i] = (client){.o = o, .t = t, .index = i, .t_end = t0 + o->seconds};
        cs[i].lat_us = malloc(LAT_MAX * sizeof(double));
        pthread_create(&th[i], NULL, client_run, &cs[i]);
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        out->sent += cs[i].sent;
        out->ok += cs[i].ok;
        out->errors += cs[i].errors;
        out->timeouts += cs[i].timeouts;
        out->nlat += cs[i].nlat;
        if (!cs[i].connected)
            rc = -1;
    }
    out->seconds = gf_load_now() - t0;
    out->lat_us = malloc((size_t)(out->nlat ? out->nlat : 1) * sizeof *out->lat_us);
    long long k = 0;
    for (int i = 0; i < n; i++) {
        if (out->lat_us)
            memcpy(out->lat_us + k, cs[i].lat_us, (size_t)cs[i].nlat * sizeof *out->lat_us);
        k += cs[i].nlat;
        free(cs[i].lat_us);
    }
    if (out->lat_us)
        qsort(out->lat_us, (size_t)out->nlat, sizeof *out->lat_us, gf_load_cmp_double);
    return rc;
}
