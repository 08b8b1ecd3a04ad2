/*
 * gamefn/conn.h — a NATS connection and JetStream context from config.
 *
 * - servers list (config nats.servers or GAMEFN_NATS_URL), reconnect forever with
 *   exponential backoff plus uniform jitter (gf_backoff_ms: reconnect_wait doubling
 *   up to reconnect_max_wait, + up to reconnect_jitter);
 * - credentials file, nkey seed file, or user and password; TLS with CA, client
 *   cert and key;
 * - connection name "<function>-<instance id>", visible in the server's /connz;
 * - SendAsap on unless nats.flush is `batched`: responders otherwise pay nats.c's 1 ms
 *   flusher delay (docs/NATS-FACTS.md §1), but under load a write per message costs
 *   CPU on both sides; gf_conn_open_batched chooses for itself;
 * - disconnect, reconnect, close and async errors are logged.
 *
 * Ownership: gf_conn_open() returns a gf_conn that owns the natsConnection and the
 * jsCtx; gf_conn_close() drains (bounded), closes and frees them. Threads: callbacks
 * run on nats.c threads and only log and flip atomics.
 */
#ifndef GAMEFN_CONN_H
#define GAMEFN_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/config.h"
#include "gamefn/err.h"

typedef struct gf_conn gf_conn;

/* Connects, retrying with the configured backoff until connected, until
 * `*stop` becomes non-zero (-> GF_ERR_UNAVAILABLE), or until `give_up_ms` has
 * passed (0 = never give up). A bad option (missing credentials or seed file, bad
 * TLS file) fails at once with GF_ERR_CONFIG, and so does a server refusal (login
 * rejected, server certificate not trusted; a rejected client certificate after a
 * few attempts, since the server only closes the connection). */
gf_err gf_conn_open(const gf_nats_config *cfg, const char *name, const atomic_int *stop,
                    int64_t give_up_ms, gf_conn **out);

/* The same, but with `batched` set nats.c's flusher batches publishes (one write per
 * millisecond or so) instead of SendAsap's write per message: for a connection that
 * streams publishes and answers no requests (the event producer's own connection),
 * where 1 ms of latency is nothing and a syscall per message is a large part of the
 * cost. */
gf_err gf_conn_open_batched(const gf_nats_config *cfg, const char *name, bool batched,
                            const atomic_int *stop, int64_t give_up_ms, gf_conn **out);

natsConnection *gf_conn_nats(gf_conn *c);
jsCtx *gf_conn_js(gf_conn *c);

/* Number of times the connection was re-established since open. */
int64_t gf_conn_reconnects(gf_conn *c);

/* Drains subscriptions and pending publishes (bounded by timeout_ms), then closes
 * and frees. NULL is fine. */
void gf_conn_close(gf_conn *c, int64_t timeout_ms);

/* Drains one asynchronous subscription and destroys it. natsSubscription_Destroy alone
 * does not wait for a callback already running on the subscription's delivery thread,
 * which may then use what the caller frees next; after a drain it has returned, and no
 * other will run. Returns false if the drain did not finish within timeout_ms (the
 * subscription is destroyed anyway; a callback may still be running). NULL is fine. */
bool gf_sub_close(natsSubscription *sub, int64_t timeout_ms);

/* After natsSubscription_Unsubscribe, whether the subscription may be freed: nats.c
 * 3.4.1's read loop may still be inside a message it matched to it just before, and
 * uses the subscription without holding a reference (docs/NATS-FACTS.md §4). The read
 * loop handles a flush's PONG only after that message, so a flush answered after the
 * unsubscribe proves it is done. true: free it. false: still connected and no PONG
 * within timeout_ms — leave it allocated (a leak beats a use after free). Not connected
 * (reconnecting, closed): true; nats.c has shut the read loop's socket and joins that
 * thread before connecting again (a small window remains, see §4). */
bool gf_sub_unsubscribed_passed(natsConnection *nc, int64_t timeout_ms);

/* Unsubscribes and frees a subscription whose messages may still be arriving, once
 * gf_sub_unsubscribed_passed says it may (else logs and leaks it). For a subscription
 * without a callback still to wait for; with callbacks, gf_sub_close. A JetStream
 * subscription whose consumer nats.c created (not bound to an existing one) loses that
 * consumer with the unsubscribe, as with natsSubscription_Unsubscribe. NULL is fine. */
void gf_sub_forget(natsConnection *nc, natsSubscription *sub, int64_t timeout_ms);

/* The flush bound the runtime and the functions give gf_sub_forget and
 * gf_kv_watcher_forget when they stop: long enough for a loaded server's PONG, short
 * enough not to hold a stop up (a leak is logged past it). */
enum { GF_SUB_FORGET_WAIT_MS = 2000 };

/* The same for a KV watcher (its updates come on a subscription): stops it, and destroys
 * it once gf_sub_unsubscribed_passed says so (else logs and leaks it). NULL is fine. */
void gf_kv_watcher_forget(natsConnection *nc, kvWatcher *w, int64_t timeout_ms);

/* A nats.c status as a gf_err, the one mapping (for functions that call nats.c directly
 * too): NATS_OK -> GF_OK; NATS_TIMEOUT -> GF_ERR_TIMEOUT; NATS_NOT_FOUND ->
 * GF_ERR_NOT_FOUND; NATS_NO_RESPONDERS / no server / connection closed, disconnected,
 * stale or draining -> GF_ERR_UNAVAILABLE; NATS_NO_MEMORY -> GF_ERR_NOMEM;
 * NATS_INVALID_ARG / NATS_INVALID_SUBJECT -> GF_ERR_INVALID; else GF_ERR_NATS. */
gf_err gf_nats_err(natsStatus s);

#endif
