/*
 * support/mmcheck/mmcheck.h — the independent checker (gamefn/check/check.h) over a
 * running deployment's matchmaking audit, for tests and `gamefn-bench e2e`.
 *
 * It reads the audit mirrors AUDIT_TICKETS, AUDIT_MATCHES and AUDIT_PLAYERS with the
 * checker's own reader (gamefn/check/check_read.h: each mirror once it holds every
 * revision its bucket has written, every message through an ordered consumer), feeds a
 * gf_check and computes its report; a mirror that did not catch up or is missing fails
 * the run. The counts come from what JetStream recorded, never from the functions' own
 * counters. The event log's streams are left out.
 *
 * Ownership: gf_mmcheck_run allocates *out (gf_mmcheck_free releases it, NULL is fine);
 * the report inside lives as long as it. The jsCtx and the queue table are borrowed.
 * Threads: one call at a time per jsCtx's connection is fine; nothing is shared.
 */
#ifndef GAMEFN_SUPPORT_MMCHECK_H
#define GAMEFN_SUPPORT_MMCHECK_H

#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/check/check.h"
#include "gamefn/err.h"

typedef struct gf_mmcheck_opts {
    const gf_match_config *queues; /* prepared queue table; NULL: limits not checked */
    int64_t since_ms;              /* tickets created before are skipped; 0 = all */
    int64_t grace_ms;              /* 0 = the checker's default (5 s) */
    int64_t catch_up_ms; /* the longest a mirror behind its bucket may take no revision; 0 = 20 s */
} gf_mmcheck_opts;

typedef struct gf_mmcheck {
    gf_check *checker;
    const gf_check_report *report;
    uint64_t messages; /* ticket and player revisions read */
} gf_mmcheck;

/* GF_OK with *out; GF_ERR_TIMEOUT when a mirror did not catch up or a read stalled,
 * GF_ERR_NOT_FOUND when a mirror is missing, GF_ERR_NATS / GF_ERR_NOMEM otherwise (why on
 * stderr). */
gf_err gf_mmcheck_run(natsConnection *nc, jsCtx *js, const gf_mmcheck_opts *opts, gf_mmcheck **out);
void gf_mmcheck_free(gf_mmcheck *m);

/* A count of the report by name (gf_check_report_find), 0 when absent or not checked. */
uint64_t gf_mmcheck_count(const gf_mmcheck *m, const char *name);

/* One line per count to stderr: "check: name=N (detail)" and the examples of any
 * count that is not zero. */
void gf_mmcheck_print(const gf_mmcheck *m);

#endif
