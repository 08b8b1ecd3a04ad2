/*
 * gamefn/fetch.h — one fetch from a pull subscription, done the way nats.c 3.4.1 needs
 * (docs/NATS-FACTS.md §3), for code that reads a stream through a pull consumer of its
 * own (e.g. a follower of a KV bucket's stream).
 *
 * A NoWait request with an expiry takes whatever is ready, and returns only once the
 * server ended the request, so no message of it can land after the call (a plain
 * natsSubscription_Fetch that times out locally leaves its request open, and what the
 * server sends for it is mixed into the next fetch). When nothing is ready, a long poll
 * for one message of at most poll_ms follows. On nats-server 2.9.10 the NoWait request
 * itself waits up to max(poll_ms, 500 ms) for a first message when nothing is stored, so
 * a call that gets nothing returns after about that plus poll_ms (docs/NATS-FACTS.md §3).
 * This is the runtime's own pull fetch.
 *
 * Returns NATS_OK with list filled (natsMsgList_Destroy it), NATS_TIMEOUT when nothing
 * came within poll_ms, or another status. Threads: one caller per subscription.
 */
#ifndef GAMEFN_FETCH_H
#define GAMEFN_FETCH_H

#include <stdint.h>

#include <nats/nats.h>

natsStatus gf_pull_fetch(natsSubscription *sub, natsMsgList *list, int batch, int64_t poll_ms);

#endif
