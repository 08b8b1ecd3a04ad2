/*
 * srv.c — $SRV discovery (NATS services protocol, ADR-32) on plain subscriptions.
 *
 * Design notes:
 *  - nats.c 3.4.1 has no micro API (docs/NATS-FACTS.md §1), so we answer the protocol's three verbs
 *    ourselves. Nine plain (non-queue) subscriptions: $SRV.<VERB>,
 *    $SRV.<VERB>.<name> and $SRV.<VERB>.<name>.<id> for PING, INFO and STATS.
 *    They are not queue subscriptions on purpose: discovery wants every
 *    instance to answer.
 *  - One responder callback serves all nine; the verb comes from the subject.
 *    It builds the answer with jansson and publishes it to the reply subject.
 *  - Counters: one mutex per service guards every endpoint's counters and
 *    last_error. gf_srv_record() (handler threads) and the STATS builder
 *    (nats.c subscription threads) both take it; they hold it only to copy or
 *    bump a few integers, never across a publish.
 *  - Shutdown: each subscription gets a completion callback (nats.c calls it
 *    once the subscription is closed and its handler has returned).
 *    gf_srv_stop() unsubscribes, then waits for every completion before it
 *    frees the struct the handlers use, so a responder running concurrently
 *    with stop never touches freed memory.
 *  - Replies go only to allowed inboxes (core/reply.h): a requester cannot make
 *    discovery publish its JSON into a stream or the JetStream API.
 *  - Health: before each answer the owner's check hook brings counters up to date
 *    and may report the instance unhealthy; PING then goes unanswered and INFO /
 *    STATS say why in their metadata. The hook runs without srv->mu held.
 *  - Validation follows ADR-32: the name is [A-Za-z0-9_-]+, the version is
 *    checked with the regular expression semver.org suggests (as POSIX ERE).
 *    The id must be one subject token, since it ends up in a subject. Names,
 *    tokens and subjects are checked with gamefn/names.h like everywhere else.
 *
 * Folder runtime/src/discovery/: $SRV discovery, this file. It may use core/ and
 * nats/; endpoints record their requests through gf_srv_record().
 */
#include "gamefn/srv.h"

#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/reply.h"
#include "core/why.h"
#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"
#include "gamefn/names.h"
#include "gamefn/utf8.h"
#include "nats/nats_err.h"

enum { SRV_NVERBS = 3, SRV_NSUBS = 9, SRV_LAST_ERROR_MAX = 256 };

/* Bound on waiting for nats.c to finish a responder that is running while we
 * stop. A responder only builds a small JSON and publishes it, so this is only
 * reached if the caller broke the contract (destroyed the connection first). */
enum { SRV_STOP_WAIT_MS = 5000 };

static const char *const srv_verbs[SRV_NVERBS] = {"PING", "INFO", "STATS"};

typedef struct srv_endpoint {
    char *name;
    char *subject;
    char *queue_group; /* "" for none */
    int64_t num_requests;
    int64_t num_errors;
    int64_t processing_ns;
    int64_t num_refused; /* reply subject not allowed (also in num_errors) */
    int64_t num_dropped; /* dropped under overload (also in num_errors) */
    char last_error[SRV_LAST_ERROR_MAX];
} srv_endpoint;

struct gf_srv {
    natsConnection *nc; /* borrowed; NULL for gf_srv_create() */
    char *name;
    char *version;
    char *id;
    char *description;
    char started[GF_CLOCK_RFC3339_MAX]; /* RFC 3339, UTC, nanoseconds */
    srv_endpoint *eps;
    size_t eps_len;
    char **reply_prefixes;
    size_t reply_prefixes_len;
    gf__reply_guard guard; /* borrows reply_prefixes */
    bool (*check)(void *closure, char *why, size_t why_size);
    void *check_closure;

    pthread_mutex_t mu;  /* guards eps[*] counters and live_subs */
    pthread_cond_t done; /* signalled when a subscription completes */
    int live_subs;       /* subscriptions whose completion is still pending */
    natsSubscription *subs[SRV_NSUBS];
};

/* ---- validation ----------------------------------------------------------- */

/* semver.org's suggested expression, written for POSIX ERE (no \d, no (?:)). */
static const char srv_semver_re[] = "^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)"
                                    "(-((0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
                                    "(\\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
                                    "(\\+([0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*))?$";

static gf_err srv_semver_ok(const char *s, bool *ok)
{
    regex_t re;
    *ok = false;
    if (s == NULL)
        return GF_OK;
    if (regcomp(&re, srv_semver_re, REG_EXTENDED | REG_NOSUB) != 0)
        return GF_ERR_NOMEM; /* the pattern is constant: only memory can fail */
    *ok = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return GF_OK;
}

/* JSON strings must be UTF-8 (NULL counts as ""). */
static bool srv_utf8_ok(const char *s)
{
    return s == NULL || gf_utf8_valid(s, strlen(s));
}

/* Fills `why` and returns GF_ERR_INVALID. */
#define srv_problem(why, why_size, ...) (gf__why((why), (why_size), __VA_ARGS__), GF_ERR_INVALID)

/* GF_OK, or GF_ERR_INVALID with what is wrong in `why` (GF_ERR_NOMEM from regcomp). */
static gf_err srv_validate(const gf_srv_info *info, char *why, size_t why_size)
{
    char name_why[GF_NAME_WHY_MAX], q[128], q2[256];
    bool semver = false;
    gf_err err;

    if (info == NULL)
        return srv_problem(why, why_size, "no service info");
    if (!gf_name_id_ok(info->name, GF_NAME_MAX, name_why, sizeof name_why))
        return srv_problem(why, why_size, "service name %s %s",
                           gf_log_quote(q, sizeof q, info->name ? info->name : "(null)"), name_why);
    err = srv_semver_ok(info->version, &semver);
    if (err != GF_OK)
        return err;
    if (!semver)
        return srv_problem(why, why_size, "service %s: version %s is not semver", info->name,
                           gf_log_quote(q, sizeof q, info->version ? info->version : "(null)"));
    if (!gf_name_token_ok(info->id, name_why, sizeof name_why))
        return srv_problem(why, why_size, "service %s: instance id %s %s", info->name,
                           gf_log_quote(q, sizeof q, info->id ? info->id : "(null)"), name_why);
    if (info->endpoints_len > 0 && info->endpoints == NULL)
        return srv_problem(why, why_size, "service %s: endpoints_len without endpoints",
                           info->name);
    if (!srv_utf8_ok(info->description))
        return srv_problem(why, why_size, "service %s: description is not valid UTF-8", info->name);
    for (size_t i = 0; i < info->endpoints_len; i++) {
        const gf_srv_endpoint *ep = &info->endpoints[i];
        const char *what = NULL;
        if (!srv_utf8_ok(ep->subject) || !srv_utf8_ok(ep->queue_group))
            return srv_problem(why, why_size,
                               "service %s: endpoint %zu: subject or queue group is not valid "
                               "UTF-8",
                               info->name, i);
        if (!gf_name_id_ok(ep->name, GF_NAME_MAX, name_why, sizeof name_why))
            what = "name";
        else if (!gf_name_subject_ok(ep->subject, true, name_why, sizeof name_why))
            what = "subject";
        else if (ep->queue_group != NULL && ep->queue_group[0] != '\0' &&
                 !gf_name_token_ok(ep->queue_group, name_why, sizeof name_why))
            what = "queue group";
        if (what)
            return srv_problem(
                why, why_size, "service %s: endpoint %zu (%s, subject %s): %s %s", info->name, i,
                gf_log_quote(q, sizeof q, ep->name ? ep->name : "(null)"),
                gf_log_quote(q2, sizeof q2, ep->subject ? ep->subject : "(null)"), what, name_why);
    }
    return GF_OK;
}

/* ---- lifetime --------------------------------------------------------------- */

static char *srv_strdup(const char *s, bool *failed)
{
    char *copy = strdup(s ? s : "");
    if (copy == NULL)
        *failed = true;
    return copy;
}

static void srv_free(gf_srv *srv)
{
    if (srv == NULL)
        return;
    for (size_t i = 0; i < srv->eps_len; i++) {
        free(srv->eps[i].name);
        free(srv->eps[i].subject);
        free(srv->eps[i].queue_group);
    }
    free(srv->eps);
    for (size_t i = 0; i < srv->reply_prefixes_len; i++)
        free(srv->reply_prefixes[i]);
    free(srv->reply_prefixes);
    free(srv->name);
    free(srv->version);
    free(srv->id);
    free(srv->description);
    pthread_cond_destroy(&srv->done);
    pthread_mutex_destroy(&srv->mu);
    free(srv);
}

gf_err gf_srv_create(const gf_srv_info *info, gf_srv **out, char *why, size_t why_size)
{
    gf_srv *srv = NULL;
    bool failed = false;
    gf_err err;

    if (out == NULL)
        return GF_ERR_INVALID;
    *out = NULL;
    if (why != NULL && why_size > 0)
        why[0] = '\0';
    err = srv_validate(info, why, why_size);
    if (err != GF_OK)
        return err;

    srv = calloc(1, sizeof *srv);
    if (srv == NULL)
        return GF_ERR_NOMEM;
    if (pthread_mutex_init(&srv->mu, NULL) != 0) {
        free(srv);
        return GF_ERR_NOMEM;
    }
    if (pthread_cond_init(&srv->done, NULL) != 0) {
        pthread_mutex_destroy(&srv->mu);
        free(srv);
        return GF_ERR_NOMEM;
    }
    srv->name = srv_strdup(info->name, &failed);
    srv->version = srv_strdup(info->version, &failed);
    srv->id = srv_strdup(info->id, &failed);
    srv->description = srv_strdup(info->description, &failed);
    if (info->endpoints_len > 0) {
        srv->eps = calloc(info->endpoints_len, sizeof *srv->eps);
        if (srv->eps == NULL) {
            failed = true;
        } else {
            srv->eps_len = info->endpoints_len;
            for (size_t i = 0; i < srv->eps_len; i++) {
                srv->eps[i].name = srv_strdup(info->endpoints[i].name, &failed);
                srv->eps[i].subject = srv_strdup(info->endpoints[i].subject, &failed);
                srv->eps[i].queue_group = srv_strdup(info->endpoints[i].queue_group, &failed);
            }
        }
    }
    if (info->reply_prefixes_len > 0 && info->reply_prefixes) {
        srv->reply_prefixes = calloc(info->reply_prefixes_len, sizeof *srv->reply_prefixes);
        if (srv->reply_prefixes == NULL) {
            failed = true;
        } else {
            srv->reply_prefixes_len = info->reply_prefixes_len;
            for (size_t i = 0; i < srv->reply_prefixes_len; i++)
                srv->reply_prefixes[i] = srv_strdup(info->reply_prefixes[i], &failed);
        }
    }
    if (failed) {
        srv_free(srv);
        return GF_ERR_NOMEM;
    }
    srv->check = info->check;
    srv->check_closure = info->check_closure;
    gf__reply_guard_init(&srv->guard, (const char *const *)srv->reply_prefixes,
                         srv->reply_prefixes_len, "$SRV");
    gf_clock_rfc3339(gf_clock_unix_ns(), 9, srv->started, sizeof srv->started);
    *out = srv;
    return GF_OK;
}

/* ---- JSON answers ------------------------------------------------------------ */

/* The owner's verdict: true when healthy; otherwise the reason is in `why`. */
static bool srv_healthy(gf_srv *srv, char *why, size_t why_size)
{
    why[0] = '\0';
    if (srv->check == NULL || srv->check(srv->check_closure, why, why_size))
        return true;
    if (why[0] == '\0')
        snprintf(why, why_size, "unhealthy");
    return false;
}

/* The fields every answer starts with; `unhealthy` NULL: metadata {} (PING), else
 * metadata.healthy, and the reason when it is not "". NULL on allocation failure. */
static json_t *srv_json_base(const gf_srv *srv, const char *type, const char *unhealthy)
{
    json_t *root = json_pack("{s:s, s:s, s:s, s:s, s:{}}", "type", type, "name", srv->name, "id",
                             srv->id, "version", srv->version, "metadata");
    json_t *md = json_object_get(root, "metadata");
    if (root == NULL || unhealthy == NULL)
        return root;
    if (json_object_set_new(md, "healthy", json_string(unhealthy[0] ? "false" : "true")) != 0 ||
        (unhealthy[0] && json_object_set_new(md, "unhealthy", json_string(unhealthy)) != 0)) {
        json_decref(root);
        return NULL;
    }
    return root;
}

static gf_err srv_json_dump(json_t *root, char **json)
{
    *json = NULL;
    if (root == NULL)
        return GF_ERR_NOMEM;
    *json = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return *json ? GF_OK : GF_ERR_NOMEM;
}

gf_err gf_srv_ping_json(gf_srv *srv, char **json)
{
    char why[SRV_LAST_ERROR_MAX];
    if (srv == NULL || json == NULL)
        return GF_ERR_INVALID;
    *json = NULL;
    if (!srv_healthy(srv, why, sizeof why))
        return GF_ERR_UNAVAILABLE; /* no answer: an unhealthy instance is not "up" */
    return srv_json_dump(srv_json_base(srv, "io.nats.micro.v1.ping_response", NULL), json);
}

gf_err gf_srv_info_json(gf_srv *srv, char **json)
{
    json_t *root = NULL;
    json_t *eps = NULL;
    char why[SRV_LAST_ERROR_MAX];

    if (srv == NULL || json == NULL)
        return GF_ERR_INVALID;
    *json = NULL;
    srv_healthy(srv, why, sizeof why);
    root = srv_json_base(srv, "io.nats.micro.v1.info_response", why);
    eps = json_array();
    if (root == NULL || eps == NULL)
        goto out;
    for (size_t i = 0; i < srv->eps_len; i++) {
        json_t *ep =
            json_pack("{s:s, s:s, s:s, s:{}}", "name", srv->eps[i].name, "subject",
                      srv->eps[i].subject, "queue_group", srv->eps[i].queue_group, "metadata");
        if (json_array_append_new(eps, ep) != 0)
            goto out;
    }
    if (json_object_set_new(root, "description", json_string(srv->description)) != 0)
        goto out;
    if (json_object_set_new(root, "endpoints", eps) != 0) {
        eps = NULL; /* json_object_set_new consumed it even on failure */
        goto out;
    }
    return srv_json_dump(root, json);
out:
    json_decref(eps);
    json_decref(root);
    return GF_ERR_NOMEM;
}

gf_err gf_srv_stats_json(gf_srv *srv, char **json)
{
    json_t *root = NULL;
    json_t *eps = NULL;
    srv_endpoint *snap = NULL;
    char why[SRV_LAST_ERROR_MAX];

    if (srv == NULL || json == NULL)
        return GF_ERR_INVALID;
    *json = NULL;
    srv_healthy(srv, why, sizeof why); /* first: it may bring counters up to date */
    /* Copy the counters under the lock, build JSON outside it. */
    if (srv->eps_len > 0) {
        snap = malloc(srv->eps_len * sizeof *snap);
        if (snap == NULL)
            return GF_ERR_NOMEM;
        pthread_mutex_lock(&srv->mu);
        memcpy(snap, srv->eps, srv->eps_len * sizeof *snap);
        pthread_mutex_unlock(&srv->mu);
    }
    root = srv_json_base(srv, "io.nats.micro.v1.stats_response", why);
    eps = json_array();
    if (root == NULL || eps == NULL)
        goto out;
    for (size_t i = 0; i < srv->eps_len; i++) {
        const srv_endpoint *e = &snap[i];
        int64_t avg = e->num_requests > 0 ? e->processing_ns / e->num_requests : 0;
        json_t *ep = json_pack(
            "{s:s, s:s, s:s, s:I, s:I, s:s, s:I, s:I, s:I, s:I}", "name", e->name, "subject",
            e->subject, "queue_group", e->queue_group, "num_requests", (json_int_t)e->num_requests,
            "num_errors", (json_int_t)e->num_errors, "last_error", e->last_error, "processing_time",
            (json_int_t)e->processing_ns, "average_processing_time", (json_int_t)avg, "num_refused",
            (json_int_t)e->num_refused, "num_dropped", (json_int_t)e->num_dropped);
        if (json_array_append_new(eps, ep) != 0)
            goto out;
    }
    if (json_object_set_new(root, "started", json_string(srv->started)) != 0 ||
        json_object_set_new(root, "discovery_refused",
                            json_integer((json_int_t)atomic_load(&srv->guard.refused))) != 0)
        goto out;
    if (json_object_set_new(root, "endpoints", eps) != 0) {
        eps = NULL;
        goto out;
    }
    free(snap);
    return srv_json_dump(root, json);
out:
    free(snap);
    json_decref(eps);
    json_decref(root);
    return GF_ERR_NOMEM;
}

void gf_srv_record(gf_srv *srv, size_t index, int64_t processing_ns, const char *error)
{
    if (srv == NULL || index >= srv->eps_len)
        return;
    if (processing_ns < 0)
        processing_ns = 0; /* a clock step must not make totals go backwards */
    pthread_mutex_lock(&srv->mu);
    srv_endpoint *e = &srv->eps[index];
    e->num_requests++;
    if (e->processing_ns > INT64_MAX - processing_ns)
        e->processing_ns = INT64_MAX;
    else
        e->processing_ns += processing_ns;
    if (error != NULL) {
        e->num_errors++;
        snprintf(e->last_error, sizeof e->last_error, "%s", error);
    }
    pthread_mutex_unlock(&srv->mu);
}

void gf_srv_record_unhandled(gf_srv *srv, size_t index, gf_srv_unhandled what, int64_t n,
                             const char *error)
{
    if (srv == NULL || index >= srv->eps_len || n <= 0)
        return;
    pthread_mutex_lock(&srv->mu);
    srv_endpoint *e = &srv->eps[index];
    e->num_requests += n;
    e->num_errors += n;
    if (what == GF_SRV_REFUSED)
        e->num_refused += n;
    else
        e->num_dropped += n;
    if (error != NULL)
        snprintf(e->last_error, sizeof e->last_error, "%s", error);
    pthread_mutex_unlock(&srv->mu);
}

/* ---- responders ------------------------------------------------------------ */

static void srv_on_request(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    gf_srv *srv = closure;
    const char *subject = natsMsg_GetSubject(msg);
    const char *reply = natsMsg_GetReply(msg);
    char *json = NULL;
    gf_err err = GF_ERR_INVALID;

    if (reply == NULL || reply[0] == '\0')
        goto out; /* nobody to answer */
    if (!gf__reply_guard_check(&srv->guard, reply))
        goto out; /* counted and logged by the guard */
    if (strncmp(subject, "$SRV.PING", 9) == 0 && (subject[9] == '\0' || subject[9] == '.'))
        err = gf_srv_ping_json(srv, &json);
    else if (strncmp(subject, "$SRV.INFO", 9) == 0 && (subject[9] == '\0' || subject[9] == '.'))
        err = gf_srv_info_json(srv, &json);
    else if (strncmp(subject, "$SRV.STATS", 10) == 0 && (subject[10] == '\0' || subject[10] == '.'))
        err = gf_srv_stats_json(srv, &json);
    if (err == GF_ERR_UNAVAILABLE)
        goto out; /* unhealthy: PING stays unanswered on purpose */
    if (err != GF_OK) {
        gf_log_warn("srv: cannot answer", "name=%s err=%s", srv->name, gf_err_str(err));
        goto out;
    }
    natsStatus s = natsConnection_Publish(nc, reply, json, (int)strlen(json));
    if (s != NATS_OK)
        gf_log_warn("srv: reply failed", "name=%s err=%s", srv->name, gf_err_str(gf_nats_err(s)));
out:
    free(json);
    natsMsg_Destroy(msg);
}

static void srv_on_complete(void *closure)
{
    gf_srv *srv = closure;
    pthread_mutex_lock(&srv->mu);
    srv->live_subs--;
    pthread_cond_signal(&srv->done);
    pthread_mutex_unlock(&srv->mu);
}

/* Unsubscribes everything and waits for the completions. Returns false if
 * a completion did not arrive in time (the struct must then not be freed). */
static bool srv_unsubscribe_all(gf_srv *srv)
{
    bool all_done = true;
    struct timespec deadline;

    for (int i = 0; i < SRV_NSUBS; i++) {
        if (srv->subs[i] != NULL)
            natsSubscription_Unsubscribe(srv->subs[i]); /* errors: already closed */
    }
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += SRV_STOP_WAIT_MS / 1000;
    pthread_mutex_lock(&srv->mu);
    while (srv->live_subs > 0) {
        if (pthread_cond_timedwait(&srv->done, &srv->mu, &deadline) == ETIMEDOUT) {
            all_done = srv->live_subs == 0;
            break;
        }
    }
    pthread_mutex_unlock(&srv->mu);
    /* The callbacks are done; nats.c's read loop may still hold a request it matched to
     * one of the subscriptions (docs/NATS-FACTS.md §4). */
    if (!all_done || (srv->nc && !gf_sub_unsubscribed_passed(srv->nc, SRV_STOP_WAIT_MS)))
        return false;
    for (int i = 0; i < SRV_NSUBS; i++) {
        natsSubscription_Destroy(srv->subs[i]);
        srv->subs[i] = NULL;
    }
    return true;
}

static gf_err srv_subscribe(gf_srv *srv, int slot, const char *subject, char *why, size_t why_size)
{
    natsSubscription *sub = NULL;
    natsStatus s = natsConnection_Subscribe(&sub, srv->nc, subject, srv_on_request, srv);
    if (s != NATS_OK) {
        gf__why(why, why_size, "service %s: subscribe to %s failed: %s", srv->name, subject,
                gf__nats_last_error(s));
        return gf_nats_err(s);
    }
    srv->subs[slot] = sub;
    /* Count it before setting the callback: the callback can only fire after
     * we unsubscribe, which happens later on this thread. */
    pthread_mutex_lock(&srv->mu);
    srv->live_subs++;
    pthread_mutex_unlock(&srv->mu);
    s = natsSubscription_SetOnCompleteCB(sub, srv_on_complete, srv);
    if (s != NATS_OK) {
        /* No completion will come: we cannot wait for it, so stop counting it. */
        pthread_mutex_lock(&srv->mu);
        srv->live_subs--;
        pthread_mutex_unlock(&srv->mu);
        gf__why(why, why_size, "service %s: completion callback refused on %s", srv->name, subject);
        return gf_nats_err(s);
    }
    return GF_OK;
}

gf_err gf_srv_start(natsConnection *nc, const gf_srv_info *info, gf_srv **out, char *why,
                    size_t why_size)
{
    gf_srv *srv = NULL;
    gf_err err;

    if (out == NULL)
        return srv_problem(why, why_size, "no out parameter");
    *out = NULL;
    if (nc == NULL)
        return srv_problem(why, why_size, "no connection");
    err = gf_srv_create(info, &srv, why, why_size);
    if (err != GF_OK)
        return err;
    srv->nc = nc;

    int slot = 0;
    for (int v = 0; v < SRV_NVERBS && err == GF_OK; v++) {
        char subject[3][512];
        snprintf(subject[0], sizeof subject[0], "$SRV.%s", srv_verbs[v]);
        snprintf(subject[1], sizeof subject[1], "$SRV.%s.%s", srv_verbs[v], srv->name);
        snprintf(subject[2], sizeof subject[2], "$SRV.%s.%s.%s", srv_verbs[v], srv->name, srv->id);
        for (int k = 0; k < 3 && err == GF_OK; k++)
            err = srv_subscribe(srv, slot++, subject[k], why, why_size);
    }
    if (err != GF_OK) {
        gf_srv_stop(srv);
        return err;
    }
    /* Make sure the server has the interest before we report the service up,
     * so a PING right after start is answered. A failure here is not fatal:
     * nats.c resends subscriptions when it reconnects. */
    natsStatus s = natsConnection_FlushTimeout(nc, 5000);
    if (s != NATS_OK)
        gf_log_warn("srv: flush after subscribe failed", "name=%s err=%s", srv->name,
                    gf_err_str(gf_nats_err(s)));
    gf_log_info("srv: started", "name=%s version=%s id=%s endpoints=%zu", srv->name, srv->version,
                srv->id, srv->eps_len);
    *out = srv;
    return GF_OK;
}

void gf_srv_stop(gf_srv *srv)
{
    if (srv == NULL)
        return;
    if (!srv_unsubscribe_all(srv)) {
        /* A responder is still running (the connection was probably destroyed
         * first). Leaking is the only safe choice: freeing would race it. */
        gf_log_error("srv: responders did not finish, leaking the service", "name=%s", srv->name);
        return;
    }
    srv_free(srv);
}
