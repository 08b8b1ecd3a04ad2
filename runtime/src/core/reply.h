/*
 * core/reply.h — private: where a function may publish a reply.
 *
 * A requester names the reply subject, and the function publishes there with its
 * own credentials (docs/NATS-FACTS.md §14). Left unchecked, that makes every function a confused
 * deputy: a request with reply subject `$JS.API.STREAM.DELETE.X` deletes stream X, one with reply
 * `events.x` stores the requester's bytes in a stream. So a reply goes out only when its subject
 *   - starts with one of the allowed prefixes (runtime.reply_prefixes, "_INBOX." by
 *     default: the inboxes NATS clients make up for requests),
 *   - is a literal subject (no wildcard, no empty token), and
 *   - is not under a reserved space ($JS., $KV., $O., $SYS., $SRV., gamefn.), whatever
 *     the prefixes say: JetStream's API and acks, KV writes, the system account,
 *     discovery and our own subjects are never a reply's destination.
 * Request endpoints and the $SRV responders both check with a gf__reply_guard, which
 * counts refusals and logs them at most once per GF__REPLY_LOG_EVERY_MS.
 *
 * Pure and reentrant except the guard, whose counters are atomics (any thread).
 * Ownership: a guard borrows its prefixes; they must outlive it.
 */
#ifndef GAMEFN_CORE_REPLY_H
#define GAMEFN_CORE_REPLY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { GF__REPLY_LOG_EVERY_MS = 10000 };

/* The default when no prefixes are configured. */
#define GF__REPLY_DEFAULT_PREFIX "_INBOX."

/* NULL when `prefix` may be configured; otherwise a phrase saying why not (static):
 * it must be whole tokens ending with '.', literal, and outside the reserved spaces. */
const char *gf__reply_prefix_problem(const char *prefix);

/* true when a reply may go to `subject` (see above). n == 0 means the default. */
bool gf__reply_allowed(const char *subject, const char *const *prefixes, size_t n);

typedef struct gf__reply_guard {
    const char *const *prefixes; /* borrowed */
    size_t prefixes_len;
    const char *where;        /* names the checker in the log line, e.g. "endpoint echo" */
    atomic_llong refused;     /* since init */
    atomic_llong unlogged;    /* refusals since the last log line */
    atomic_llong next_log_ms; /* monotonic: no line before this */
} gf__reply_guard;

void gf__reply_guard_init(gf__reply_guard *g, const char *const *prefixes, size_t n,
                          const char *where);

/* true when `reply` is allowed. Otherwise counts the refusal, logs it (rate-limited,
 * with the number of refusals not logged since the previous line) and returns false. */
bool gf__reply_guard_check(gf__reply_guard *g, const char *reply);

#endif
