/*
 * mmstore_read.h — batched KV reads for mmstore (private to functions/mmstore).
 *
 * One wildcard subscription per store, made once, receives every answer: each key of a
 * batch is a direct get ($JS.API.DIRECT.GET.KV_<bucket>, {"last_by_subj": ...}; any
 * replica answers, KV streams allow it) with the reply subject <inbox>.<id>, and the
 * answer finds its waiting batch by id. A batch sends every request before it waits.
 * (A subscription per batch cost a SUB and an UNSUB per read batch: the server's
 * subject table changes on each, which it pays for every message it routes.)
 *
 * Threads: any thread may run a batch; answers arrive on the subscription's nats.c
 * delivery thread; one mutex guards the pending table, a batch waits on its own
 * condition variable. Ownership: open allocates, close frees (no batch may run then).
 */
#ifndef GAMEFN_MMSTORE_READ_H
#define GAMEFN_MMSTORE_READ_H

#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"

typedef struct mm_reads mm_reads;

gf_err mm_reads_open(natsConnection *nc, mm_reads **out);
void mm_reads_close(mm_reads *r); /* NULL is fine */

/* gf_mmstore_get_batch on bucket `bucket` (see mmstore.h), read from stream `stream`:
 * KV_<bucket>, or a mirror of it with allow_direct (a stream that does not answer direct
 * gets leaves every key GF_ERR_TIMEOUT: nats-server does not say "no responders" under
 * $JS.API). wait_ms bounds the wait for the answers; a key without one ends
 * GF_ERR_TIMEOUT. */
gf_err mm_reads_batch(mm_reads *r, const char *stream, const char *bucket, const char *const *keys,
                      size_t n, int64_t wait_ms, uint8_t **vals, size_t *lens, uint64_t *revs,
                      gf_err *errs);

#endif
