/*
 * gamefn/backoff.h — the one retry delay: exponential from a base, capped, with
 * optional random jitter.
 *
 *   gf_backoff_ms(attempt, base, cap, jitter) = min(cap, base * 2^(attempt-1))
 *                                               + a uniform random value in [0, jitter]
 *
 * attempt counts from 1 (values below count as 1). Every retry loop of the runtime uses
 * it, each with the constants of its intent: reconnecting (nats.reconnect_*, with
 * jitter so replicas that lost the same server do not reconnect in step), provisioning
 * while JetStream is not ready, binding a pull consumer, a failed fetch, and a nak when
 * the consumer has no backoff list of its own.
 *
 * Threads: reentrant. The jitter comes from the kernel (getrandom), not from a seeded
 * generator that replicas could share.
 */
#ifndef GAMEFN_BACKOFF_H
#define GAMEFN_BACKOFF_H

#include <stdint.h>

/* base_ms >= 1 and cap_ms >= base_ms are expected; jitter_ms <= 0 means none. */
int64_t gf_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms, int64_t jitter_ms);

#endif
