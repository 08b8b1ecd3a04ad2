/*
 * gamefn/srv.h — discovery compatible with the NATS services protocol (ADR-32).
 *
 * nats.c 3.4.1 has no micro API, so this module implements the protocol on plain
 * subscriptions. Every instance answers, with the standard JSON response types,
 *
 *   $SRV.PING   $SRV.PING.<name>   $SRV.PING.<name>.<id>   -> io.nats.micro.v1.ping_response
 *   $SRV.INFO   $SRV.INFO.<name>   $SRV.INFO.<name>.<id>   -> io.nats.micro.v1.info_response
 *   $SRV.STATS  $SRV.STATS.<name>  $SRV.STATS.<name>.<id>  -> io.nats.micro.v1.stats_response
 *
 * so `nats micro ls/info/stats` lists gamefn functions. STATS carries per-endpoint
 * request and error counts, last error and processing times, and two counts of
 * requests that were never handled: num_refused (the reply subject was not an allowed
 * inbox) and num_dropped (dropped under overload); both are in num_errors too.
 *
 * Replies: an answer goes only to a reply subject under `reply_prefixes` (see
 * runtime/src/core/reply.h); a $SRV request naming another reply subject is refused,
 * counted (STATS discovery_refused) and logged at a bounded rate.
 *
 * Health: the service does not keep a health state; it asks `check` before every answer.
 * While `check` says the instance is unhealthy (for a function: an endpoint that cannot
 * work, such as a request handler stuck past its deadline or a stream that is gone and
 * cannot be recreated; also while it starts or stops), PING is not answered, so `nats
 * micro ping` and liveness probes see it gone, while INFO and STATS still answer with
 * metadata healthy "false" and the reason in metadata unhealthy. Healthy INFO and STATS
 * answers carry healthy "true"; PING answers carry no metadata.
 *
 * Threads: gf_srv_record() is called from handler threads; the $SRV responders run
 * on nats.c's subscription threads. Counters are guarded by one mutex per service.
 * Ownership: gf_srv_start() copies everything it is given; gf_srv_stop() unsubscribes
 * and frees. The connection is borrowed and must outlive the service.
 */
#ifndef GAMEFN_SRV_H
#define GAMEFN_SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"

typedef struct gf_srv_endpoint {
    const char *name;        /* e.g. "create" */
    const char *subject;     /* e.g. "gamefn.v1.ticket.create" */
    const char *queue_group; /* NULL for none (pull consumers, ticks report "" ) */
} gf_srv_endpoint;

typedef struct gf_srv_info {
    const char *name;        /* service name: letters, digits, '-' and '_' only */
    const char *version;     /* semver, e.g. "0.1.0" */
    const char *id;          /* unique instance id */
    const char *description; /* may be NULL */
    const gf_srv_endpoint *endpoints;
    size_t endpoints_len;
    /* Replies go only under these (runtime.reply_prefixes); NULL or 0: "_INBOX.". */
    const char *const *reply_prefixes;
    size_t reply_prefixes_len;
    /* Called before every answer (may be NULL), on a nats.c subscription thread: brings
     * counters up to date (gf_srv_record_unhandled) and returns false, with the reason in
     * `why`, when the instance is unhealthy. It must not call gf_srv_stop(). */
    bool (*check)(void *closure, char *why, size_t why_size);
    void *check_closure;
} gf_srv_info;

typedef struct gf_srv gf_srv;

/* Validates `info`, copies it and subscribes the nine $SRV subjects. GF_ERR_INVALID when
 * the name is not [A-Za-z0-9_-]+, the version is not semver, the id is not a single
 * subject token, or an endpoint is malformed (name, subject or queue group, by
 * gamefn/names.h); other errors when subscribing fails. On failure `why` (may be NULL)
 * says what is wrong, for the caller to log; nothing is logged here. */
gf_err gf_srv_start(natsConnection *nc, const gf_srv_info *info, gf_srv **out, char *why,
                    size_t why_size);

/* Same validation and copy as gf_srv_start(), but subscribes nothing: the JSON
 * builders and gf_srv_record() work, nobody answers on $SRV. For unit tests and
 * tools. Free with gf_srv_stop(). */
gf_err gf_srv_create(const gf_srv_info *info, gf_srv **out, char *why, size_t why_size);

/* Records one handled request on endpoint `index`: processing time in nanoseconds,
 * and `error` (NULL on success) as "code:description" is kept as last_error
 * (truncated to 255 bytes). An error counts in both num_requests and num_errors.
 * An index out of range is ignored. */
void gf_srv_record(gf_srv *srv, size_t index, int64_t processing_ns, const char *error);

/* Requests on endpoint `index` that were never handled: GF_SRV_REFUSED (the reply
 * subject was not allowed) or GF_SRV_DROPPED (dropped under overload). `n` of them
 * count in num_requests, num_errors and num_refused or num_dropped; `error` (may be
 * NULL) becomes last_error. An index out of range or n <= 0 is ignored. */
typedef enum gf_srv_unhandled { GF_SRV_REFUSED = 1, GF_SRV_DROPPED } gf_srv_unhandled;
void gf_srv_record_unhandled(gf_srv *srv, size_t index, gf_srv_unhandled what, int64_t n,
                             const char *error);

/* Unsubscribes and frees. NULL is fine. */
void gf_srv_stop(gf_srv *srv);

/* Builds the JSON answers (exposed for unit tests). Caller frees *json with free(). */
gf_err gf_srv_ping_json(gf_srv *srv, char **json);
gf_err gf_srv_info_json(gf_srv *srv, char **json);
gf_err gf_srv_stats_json(gf_srv *srv, char **json);

#endif
