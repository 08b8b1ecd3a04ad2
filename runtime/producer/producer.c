/*
 * producer.c — the producer's API: open (config, spool, the spool's owner), emit,
 * flush, stats, close (see gamefn/producer.h). The publishing thread is in
 * producer_loop.c; the locks and the queue are described in producer_internal.h.
 *
 * Design notes.
 * - A spool directory belongs to one source id, recorded in its file "source" at the
 *   first open. Another id on the same directory is refused: its spooled records
 *   carry the old id in their message ids and bodies, and the headers (built from
 *   the configured id) would contradict them; and a source id that moves between
 *   directories would restart its seqs at 1, which the stream's duplicate window
 *   would silently swallow.
 * - open never waits for NATS: an owned connection is made by a connector thread,
 *   and emit only needs the spool.
 * - Dropped events are logged at error level the first time and then at most every
 *   10 s with the running count: loud, but a full spool at 2,400 events/s does not
 *   write 2,400 lines a second.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "gamefn/clock.h"
#include "gamefn/limits.h"
#include "gamefn/log.h"
#include "gamefn/names.h"
#include "producer_internal.h"

enum {
    KIB = 1024,
    DROP_LOG_EVERY_MS = 10000,
    INCARNATION_HEX = 8,
};

const char *gf_producer_state_str(gf_producer_state s)
{
    static const char *const names[] = {"ok",        "connecting",  "disconnected", "no_answer",
                                        "no_stream", "stream_full", "refused",      "closed"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

/* ---- config -------------------------------------------------------------- */

static gf_err config_resolve(const gf_producer_config *in, gf_producer_config *c, char *why,
                             size_t size)
{
    *c = *in;
    char name_why[GF_NAME_WHY_MAX];
    if (!gf_name_id_ok(c->source_id, GF_PRODUCER_NAME_MAX, name_why, sizeof name_why)) {
        snprintf(why, size, "source_id %s", name_why);
        return GF_ERR_INVALID;
    }
    if (c->spool_dir == NULL || c->spool_dir[0] == '\0') {
        snprintf(why, size, "spool_dir is required");
        return GF_ERR_INVALID;
    }
#define DEF(f, v)                                                                                  \
    if (c->f == 0)                                                                                 \
    c->f = v
    DEF(fsync_interval_ms, 100);
    DEF(spool_max_bytes, (uint64_t)KIB * KIB * KIB);
    DEF(spool_segment_bytes, (uint64_t)KIB * KIB);
    DEF(window, GF_PRODUCER_WINDOW_DEFAULT);
    DEF(memory_bytes, (uint64_t)16 * KIB * KIB);
    DEF(ack_timeout_ms, 2000);
    DEF(give_up_ms, 5000);
    DEF(retry_min_ms, 100);
    DEF(retry_max_ms, 5000);
    DEF(ack_persist_ms, 1000);
#undef DEF
    const int64_t hour = 3600000;
    struct {
        bool ok;
        const char *what;
    } checks[] = {
        {(unsigned)c->fsync <= GF_PRODUCER_FSYNC_NEVER, "fsync is not a policy"},
        {c->fsync_interval_ms >= 1 && c->fsync_interval_ms <= 60000, "fsync_interval_ms: 1..60000"},
        {c->window >= 1 && c->window <= GF_ACK_FLOOR_WINDOW_MAX, "window: 1..1048576"},
        {c->memory_bytes >= 64 * KIB, "memory_bytes: at least 64 KiB"},
        {c->ack_timeout_ms >= 1 && c->ack_timeout_ms <= hour, "ack_timeout_ms: 1..3600000"},
        {c->give_up_ms >= c->ack_timeout_ms && c->give_up_ms <= hour,
         "give_up_ms: ack_timeout_ms..3600000"},
        {c->retry_min_ms >= 1 && c->retry_max_ms >= c->retry_min_ms && c->retry_max_ms <= hour,
         "retry_min_ms >= 1, retry_max_ms: retry_min_ms..3600000"},
        {c->ack_persist_ms >= 1 && c->ack_persist_ms <= hour, "ack_persist_ms: 1..3600000"},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (!checks[i].ok) {
            snprintf(why, size, "%s", checks[i].what);
            return GF_ERR_INVALID;
        }
    return GF_OK;
}

/* The owned connection's options from cfg.url: comma-separated URLs, the runtime's
 * defaults for the rest (docs/CONFIG.md, nats). */
static gf_err own_nats_from_url(gf_producer *p, const char *url)
{
    p->url = strdup(url ? url : "nats://127.0.0.1:4222");
    if (p->url == NULL)
        return GF_ERR_NOMEM;
    size_t n = 1;
    for (const char *s = p->url; *s; s++)
        n += *s == ',';
    p->own_servers = calloc(n, sizeof *p->own_servers);
    if (p->own_servers == NULL)
        return GF_ERR_NOMEM;
    n = 0;
    for (char *save = NULL, *tok = strtok_r(p->url, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
        p->own_servers[n++] = tok;
    if (n == 0)
        return GF_ERR_INVALID;
    p->own_nats = (gf_nats_config){
        .servers = p->own_servers,
        .servers_len = n,
        .connect_timeout_ms = 2000,
        .reconnect_wait_ms = 250,
        .reconnect_jitter_ms = 250,
        .reconnect_max_wait_ms = 5000,
        .ping_interval_ms = 20000,
        .reconnect_buffer = 8 * KIB * KIB,
        .api_timeout_ms = 5000,
    };
    p->cfg.nats = &p->own_nats;
    return GF_OK;
}

/* ---- the spool's owner ----------------------------------------------------- */

/* "<name>-<8 lowercase hex>", the form of an effective source id. */
static bool source_of_name(const char *id, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(id, name, n) != 0 || id[n] != '-' || strlen(id + n + 1) != INCARNATION_HEX)
        return false;
    for (const char *c = id + n + 1; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

/* Writes `line` to dir/source atomically (tmp, fsync, rename, fsync dir). */
static gf_err write_source_file(const char *dir, const char *id)
{
    char path[4096], tmp[4096], line[80];
    snprintf(path, sizeof path, "%s/source", dir);
    snprintf(tmp, sizeof tmp, "%s/source.tmp", dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return GF_ERR_IO;
    int len = snprintf(line, sizeof line, "%s\n", id);
    bool ok = write(fd, line, (size_t)len) == len && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    ok = ok && rename(tmp, path) == 0;
    int dfd = ok ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    ok = ok && dfd >= 0 && fsync(dfd) == 0;
    if (dfd >= 0)
        close(dfd);
    return ok ? GF_OK : GF_ERR_IO;
}

/* The spool's source id: read from its file "source", or, for a new spool, the name
 * plus a fresh incarnation, written there. `used`: the spool has handed out seqs. */
static gf_err claim_spool(gf_producer *p, bool used)
{
    char path[4096], have[80] = "";
    snprintf(path, sizeof path, "%s/source", p->spool_dir);
    FILE *f = fopen(path, "r");
    if (f) {
        bool read = fgets(have, sizeof have, f) != NULL;
        fclose(f);
        have[strcspn(have, "\n")] = '\0';
        if (!read || !source_of_name(have, p->name)) {
            char q[100];
            gf_log_error("producer: spool directory belongs to another source",
                         "dir=%s source=%s owner=%s", p->spool_dir, p->name,
                         gf_log_quote(q, sizeof q, have));
            return GF_ERR_CONFIG;
        }
        snprintf(p->source_id, sizeof p->source_id, "%s", have);
        return GF_OK;
    }
    if (errno != ENOENT)
        return GF_ERR_IO;
    if (used) { /* its records carry an id nobody knows any more */
        gf_log_error("producer: spool holds events but no source file; refusing to guess", "dir=%s",
                     p->spool_dir);
        return GF_ERR_CONFIG;
    }
    uint8_t rnd[INCARNATION_HEX / 2];
    randombytes_buf(rnd, sizeof rnd);
    int n = snprintf(p->source_id, sizeof p->source_id, "%s-", p->name);
    for (size_t i = 0; i < sizeof rnd; i++)
        n += snprintf(p->source_id + n, sizeof p->source_id - (size_t)n, "%02x", rnd[i]);
    return write_source_file(p->spool_dir, p->source_id);
}

static gf_err open_spool(gf_producer *p)
{
    static const gf_spool_fsync policies[] = {
        [GF_PRODUCER_FSYNC_INTERVAL] = GF_SPOOL_FSYNC_INTERVAL,
        [GF_PRODUCER_FSYNC_ALWAYS] = GF_SPOOL_FSYNC_ALWAYS,
        [GF_PRODUCER_FSYNC_NEVER] = GF_SPOOL_FSYNC_NEVER,
    };
    gf_spool_config sc = {
        .dir = p->spool_dir,
        .fsync = policies[p->cfg.fsync],
        .fsync_interval_ms = p->cfg.fsync_interval_ms,
        .segment_bytes = p->cfg.spool_segment_bytes,
        .max_bytes = p->cfg.spool_max_bytes,
    };
    gf_err err = gf_spool_open(&sc, &p->sp);
    if (err != GF_OK)
        return err;
    gf_spool_stats st;
    gf_spool_stats_get(p->sp, &st);
    err = claim_spool(p, st.next_seq > 1);
    if (err != GF_OK)
        return err;
    p->first_seq = st.next_seq;
    p->count.spooled = st.pending_at_open;
    p->persisted_floor = st.acked_floor;
    p->head_seq = st.acked_floor + 1;
    /* Records or skipped seqs above the floor: the thread reads them back in turn. */
    p->spilled = st.next_seq - 1 > st.acked_floor;
    return gf_ack_floor_init(&p->floor, st.acked_floor, p->cfg.window);
}

static gf_err init_sync(gf_producer *p)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return GF_ERR_NOMEM;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    bool ok = pthread_mutex_init(&p->spool_mu, NULL) == 0 &&
              pthread_mutex_init(&p->mu, NULL) == 0 && pthread_cond_init(&p->wake, &ca) == 0 &&
              pthread_cond_init(&p->progress, &ca) == 0;
    pthread_condattr_destroy(&ca);
    return ok ? GF_OK : GF_ERR_NOMEM;
}

static void producer_free(gf_producer *p)
{
    for (size_t i = 0; i < p->len; i++)
        free(p->slots[(p->start + i) % p->cap]);
    free(p->slots);
    gf_ack_floor_fini(&p->floor);
    gf_spool_close(p->sp);
    pthread_mutex_destroy(&p->spool_mu);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->progress);
    free(p->own_servers);
    free(p->url);
    free(p->spool_dir);
    free(p);
}

gf_err gf_producer_open(const gf_producer_config *cfg, gf_producer **out)
{
    *out = NULL;
    char why[GF_PRODUCER_WHY_MAX] = "";
    gf_producer *p = cfg ? calloc(1, sizeof *p) : NULL;
    if (cfg && !p)
        return GF_ERR_NOMEM;
    gf_err err = cfg ? config_resolve(cfg, &p->cfg, why, sizeof why) : GF_ERR_INVALID;
    if (err == GF_ERR_INVALID) {
        gf_log_error("producer: bad config", "error=\"%s\"", cfg ? why : "no config");
        free(p);
        return err;
    }
    snprintf(p->name, sizeof p->name, "%s", cfg->source_id);
    p->cfg.source_id = p->name;
    p->spool_dir = strdup(cfg->spool_dir);
    p->cfg.spool_dir = p->spool_dir;
    p->cfg.url = NULL;
    if (init_sync(p) != GF_OK || p->spool_dir == NULL) {
        free(p->spool_dir);
        free(p);
        return GF_ERR_NOMEM;
    }
    p->owns_conn = cfg->nc == NULL;
    p->nc = cfg->nc;
    if (p->owns_conn && cfg->nats == NULL)
        err = own_nats_from_url(p, cfg->url);
    p->state = p->owns_conn ? GF_PRODUCER_CONNECTING : GF_PRODUCER_OK;
    if (p->owns_conn)
        snprintf(p->reason, sizeof p->reason, "connecting to NATS");
    if (err == GF_OK)
        err = open_spool(p);
    if (err == GF_OK && pthread_create(&p->thread, NULL, gf__producer_main, p) != 0)
        err = GF_ERR_NOMEM;
    if (err != GF_OK) {
        gf_log_error("producer: cannot open", "source=%s dir=%s error=%s", p->name, p->spool_dir,
                     gf_err_str(err));
        producer_free(p);
        return err;
    }
    if (p->owns_conn) {
        p->connector_started = pthread_create(&p->connector, NULL, gf__producer_connector, p) == 0;
        if (!p->connector_started)
            gf_log_error("producer: cannot start the connector thread", "source=%s", p->source_id);
    }
    gf_log_info("producer: opened", "source=%s dir=%s next_seq=%" PRIu64 " spooled=%" PRIu64,
                p->source_id, p->spool_dir, p->first_seq, p->count.spooled);
    *out = p;
    return GF_OK;
}

/* ---- emit ---------------------------------------------------------------- */

static void log_drop(gf_producer *p, uint64_t seq, uint64_t dropped)
{
    int64_t now = gf_clock_mono_ms();
    if (dropped > 1 && now - p->last_drop_log_ms < DROP_LOG_EVERY_MS)
        return;
    p->last_drop_log_ms = now;
    gf_log_error("producer: spool full, event DROPPED",
                 "source=%s dir=%s seq=%" PRIu64 " dropped=%" PRIu64 " max_bytes=%" PRIu64,
                 p->source_id, p->spool_dir, seq, dropped, p->cfg.spool_max_bytes);
}

/* mu held: an idle thread sleeps until work comes; a busy one polls (producer_loop.c). */
static void wake_thread(gf_producer *p)
{
    if (p->thread_idle) {
        p->thread_idle = false;
        pthread_cond_signal(&p->wake);
    }
}

/* Both locks held: queue the accepted record e, or fall back to disk. */
static void enqueue(gf_producer *p, pr_entry **e)
{
    p->count.produced++;
    p->count.spooled++;
    if (!p->spilled && p->mem_bytes + (*e)->bytes <= p->cfg.memory_bytes &&
        gf__producer_push(p, *e) == GF_OK) {
        p->mem_bytes += (*e)->bytes;
        *e = NULL;
    } else {
        p->spilled = true; /* the thread reads it back from the spool */
    }
    wake_thread(p);
}

gf_err gf_producer_emit(gf_producer *p, const gf_event *ev, gf_producer_receipt *out)
{
    gf_producer_receipt ignored;
    gf_producer_receipt *r = out ? out : &ignored;
    memset(r, 0, sizeof *r);
    if (p == NULL || ev == NULL) {
        snprintf(r->why, sizeof r->why, "no producer or no event");
        return GF_ERR_INVALID;
    }
    pr_entry *e = NULL;
    gf_err err = gf__producer_build(p->name, strlen(p->source_id), ev, &e, r);
    if (err != GF_OK) {
        pthread_mutex_lock(&p->mu);
        p->count.invalid += err == GF_ERR_INVALID;
        pthread_mutex_unlock(&p->mu);
        if (err == GF_ERR_NOMEM)
            snprintf(r->why, sizeof r->why, "out of memory");
        return err;
    }
    e->p = p;
    pthread_mutex_lock(&p->spool_mu);
    uint64_t seq = gf_spool_next_seq(p->sp);
    gf__producer_stamp(p, e, seq);
    gf_spool_record rec = {
        .seq = seq,
        .subject = e->subject,
        .msg_id = e->msg_id,
        .data = e->data,
        .data_len = e->data_len,
    };
    err = gf_spool_append(p->sp, &rec);
    uint64_t dropped = 0;
    pthread_mutex_lock(&p->mu);
    if (err == GF_OK) {
        enqueue(p, &e);
    } else if (err == GF_ERR_UNAVAILABLE) {
        dropped = ++p->count.dropped;
        if (p->spilled || gf__producer_push(p, NULL) != GF_OK)
            p->spilled = true; /* the refill sees the seq has no record */
        wake_thread(p);
    } else {
        p->count.io_errors++;
    }
    pthread_mutex_unlock(&p->mu);
    if (dropped > 0)
        log_drop(p, seq, dropped); /* spool_mu guards its rate limit */
    pthread_mutex_unlock(&p->spool_mu);
    free(e);
    r->seq = err == GF_OK || err == GF_ERR_UNAVAILABLE ? seq : 0;
    if (err == GF_OK)
        snprintf(r->event_id, sizeof r->event_id, "%s-%" PRIu64, p->source_id, seq);
    else if (err == GF_ERR_UNAVAILABLE)
        snprintf(r->why, sizeof r->why, "spool full (%" PRIu64 " bytes): event dropped",
                 p->cfg.spool_max_bytes);
    else
        snprintf(r->why, sizeof r->why, "spool write failed (%s): event not accepted",
                 gf_err_str(err));
    return err;
}

/* ---- flush, stats, close --------------------------------------------------- */

static uint64_t last_seq(gf_producer *p)
{
    pthread_mutex_lock(&p->spool_mu);
    uint64_t s = gf_spool_next_seq(p->sp) - 1;
    pthread_mutex_unlock(&p->spool_mu);
    return s;
}

static void wait_until(pthread_cond_t *c, pthread_mutex_t *mu, int64_t until_ms)
{
    struct timespec ts = {.tv_sec = until_ms / 1000, .tv_nsec = (long)(until_ms % 1000) * 1000000};
    pthread_cond_timedwait(c, mu, &ts);
}

gf_err gf_producer_flush(gf_producer *p, int64_t timeout_ms)
{
    uint64_t target = last_seq(p);
    int64_t until = timeout_ms < 0 ? INT64_MAX / 2 : gf_clock_mono_ms() + timeout_ms;
    pthread_mutex_lock(&p->mu);
    while (p->floor.floor < target && gf_clock_mono_ms() < until)
        wait_until(&p->progress, &p->mu, until);
    gf_err err = p->floor.floor >= target ? GF_OK : GF_ERR_TIMEOUT;
    pthread_mutex_unlock(&p->mu);
    return err;
}

void gf_producer_stats_get(gf_producer *p, gf_producer_stats *out)
{
    gf_spool_stats ss;
    pthread_mutex_lock(&p->spool_mu);
    gf_spool_stats_get(p->sp, &ss);
    pthread_mutex_lock(&p->mu);
    *out = p->count;
    out->in_flight = (uint64_t)p->in_flight;
    out->next_seq = ss.next_seq;
    out->acked_floor = p->floor.floor;
    out->persisted_floor = p->persisted_floor;
    out->spool_bytes = ss.bytes;
    out->spool_segments = ss.segments;
    out->torn_records = ss.torn_records;
    out->corrupt_records = ss.corrupt_records;
    out->skipped_records = ss.skipped_records;
    out->state = p->state;
    out->js_code = p->js_code;
    out->stopped_ms = p->stopped_at_ms ? gf_clock_mono_ms() - p->stopped_at_ms : 0;
    snprintf(out->source_id, sizeof out->source_id, "%s", p->source_id);
    snprintf(out->reason, sizeof out->reason, "%s", p->state == GF_PRODUCER_OK ? "" : p->reason);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->spool_mu);
}

void gf_producer_close(gf_producer *p, int64_t timeout_ms)
{
    if (p == NULL)
        return;
    if (timeout_ms > 0)
        gf_producer_flush(p, timeout_ms);
    pthread_mutex_lock(&p->mu);
    p->closing = true;
    atomic_store(&p->stop, 1);
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    if (p->connector_started)
        pthread_join(p->connector, NULL);
    gf_conn *c = atomic_load(&p->connected);
    if (c != NULL && p->conn == NULL)
        p->conn = c; /* connected after the thread stopped looking */
    gf_conn_close(p->conn, 0);
    gf_producer_stats st;
    gf_producer_stats_get(p, &st);
    gf_log_info("producer: closed",
                "source=%s produced=%" PRIu64 " acknowledged=%" PRIu64 " spooled=%" PRIu64
                " replayed=%" PRIu64 " dropped=%" PRIu64,
                p->source_id, st.produced, st.acknowledged, st.spooled, st.replayed, st.dropped);
    producer_free(p);
}
