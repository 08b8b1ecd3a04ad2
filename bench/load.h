/*
 * bench/load.h — the matchmaking benchmarks' ticket load (`gamefn-bench intake`,
 * `service`, `e2e`): population tickets sent to gamefn.v1.ticket.create, and a table of
 * what happened to each ticket, keyed by its id.
 *
 * Load: `clients` threads, each on its own connection, keep `in_flight` requests
 * outstanding (own reply subjects on one sync subscription); with `rate` > 0 they pace
 * their sends to that total, otherwise they send as fast as replies come (the service
 * takes them). Each ticket comes from the population model (support/population), a batch
 * per party size, the queue's team size capping its parties; players never repeat.
 * A ticket's id is known at its send (BLAKE2b of the idempotency key, PROTOCOL.md §6),
 * so "submitted" is the send time.
 *
 * The table: the senders write `submitted` and `created` (create reply), the status
 * subscription (gf_load_on_status on gamefn.v1.ticket.status.>) the first CLAIMED and
 * the first ASSIGNED push of each ticket (and the last CLAIMED push before it), all
 * under the table's mutex. Times are
 * monotonic seconds (gf_load_now).
 *
 * Ownership: the caller owns the table and the options' arrays; gf_load_run joins every
 * thread it started before returning. Threads: see above.
 */
#ifndef GAMEFN_BENCH_LOAD_H
#define GAMEFN_BENCH_LOAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

enum { GF_LOAD_MAX_CLIENTS = 16, GF_LOAD_MAX_WINDOW = 1024 };

typedef struct gf_load_entry {
    uint64_t key; /* first 16 hex digits of the ticket id; 0 = empty slot */
    double submitted, created, claimed, assigned;
    double claimed_last; /* the last CLAIMED push before ASSIGNED (a match aborted and
                            formed again claims the ticket again) */
} gf_load_entry;

typedef struct gf_load_table {
    pthread_mutex_t mu;
    gf_load_entry *s;
    size_t mask;
    long long pushes, claimed_pushes, assigned_pushes;
} gf_load_table;

/* 2^bits slots (the load must stay well below that). 0, or -1 out of memory. */
int gf_load_table_init(gf_load_table *t, int bits);
void gf_load_table_fini(gf_load_table *t);
/* The entry of ticket `id`, created empty if new. Under t->mu. */
gf_load_entry *gf_load_table_at(gf_load_table *t, const char *id);

/* nats.c message handler for gamefn.v1.ticket.status.> (closure: the table). */
void gf_load_on_status(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure);

/* The status subscription of a run: its own connection to url (so the pushes do not
 * queue behind the load's replies), gf_load_on_status into t, no pending limits (a
 * dropped push would look like a ticket never claimed). 0, or -1 said on stderr; the
 * caller destroys *sub and *nc either way. */
int gf_load_watch_status(const char *url, gf_load_table *t, natsConnection **nc,
                         natsSubscription **sub);

typedef struct gf_load_opts {
    const char *url;
    double seconds; /* sending stops after this */
    double rate;    /* tickets/s over all clients; 0 = as fast as replies come */
    int clients, in_flight;
    const char *const *queues; /* tickets go round-robin over these */
    const uint32_t *team_size; /* per queue: the largest party */
    size_t nqueues;
    uint64_t seed; /* population seed; 0 = the benchmarks' usual one */
} gf_load_opts;

typedef struct gf_load_result {
    long long sent, ok, errors, timeouts;
    double seconds; /* from the first send to the last reply */
    double *lat_us; /* create request latencies, sorted (nlat); caller frees */
    long long nlat;
} gf_load_result;

/* Runs the load to its end (sending stops at `seconds`, outstanding replies are waited
 * for up to 5 s). 0, or -1 if a client could not connect. */
int gf_load_run(const gf_load_opts *o, gf_load_table *t, gf_load_result *out);

double gf_load_now(void); /* monotonic seconds */

/* q-quantile (0..1) of n sorted values (0 when n is 0). */
double gf_load_pct(const double *v, size_t n, double q);
int gf_load_cmp_double(const void *a, const void *b); /* for qsort */

#endif
