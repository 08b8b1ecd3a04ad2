/*
 * mmcheck.c — see mmcheck.h. The reading is the checker's own (gamefn/check/check_read.h:
 * ordered consumers, mirrors read once they caught up with their buckets), the event
 * log's streams left out.
 */
#include "mmcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/check/check_read.h"
#include "gamefn/clock.h"

enum { DEFAULT_CATCH_UP_MS = 20000 };

gf_err gf_mmcheck_run(natsConnection *nc, jsCtx *js, const gf_mmcheck_opts *opts, gf_mmcheck **out)
{
    gf_check_params p;
    gf_check_params_default(&p);
    p.queues = opts ? opts->queues : NULL;
    p.since_ms = opts ? opts->since_ms : 0;
    if (opts && opts->grace_ms > 0)
        p.grace_ms = opts->grace_ms;
    p.now_ms = gf_clock_unix_ms();
    gf_check_read_opts ro = {.since_ms = p.since_ms,
                             .catch_up_ms = opts && opts->catch_up_ms > 0 ? opts->catch_up_ms
                                                                          : DEFAULT_CATCH_UP_MS,
                             .no_events = true,
                             .no_scores = true};
    gf_check_read_notes notes = {0};
    char why[256] = "";
    *out = NULL;
    gf_mmcheck *m = calloc(1, sizeof *m);
    if (!m)
        return GF_ERR_NOMEM;
    gf_err err = gf_check_new(&p, &m->checker);
    if (err == GF_OK)
        err = gf_check_read(nc, js, m->checker, &ro, &notes, why, sizeof why);
    if (err == GF_OK && notes.text[0])
        fprintf(stderr, "mmcheck: %s\n", notes.text);
    if (err == GF_OK && notes.missing_audit)
        err = GF_ERR_NOT_FOUND;
    else if (err == GF_OK && notes.incomplete)
        err = GF_ERR_TIMEOUT;
    if (err == GF_OK)
        err = gf_check_finish(m->checker, &m->report);
    if (err != GF_OK) {
        if (why[0])
            fprintf(stderr, "mmcheck: %s\n", why);
        gf_mmcheck_free(m);
        return err;
    }
    m->messages = m->report->totals.ticket_revisions + m->report->totals.player_revisions;
    *out = m;
    return GF_OK;
}

void gf_mmcheck_free(gf_mmcheck *m)
{
    if (!m)
        return;
    gf_check_free(m->checker);
    free(m);
}

uint64_t gf_mmcheck_count(const gf_mmcheck *m, const char *name)
{
    const gf_check_count *c = m && m->report ? gf_check_report_find(m->report, name) : NULL;
    return c && c->checked ? c->count : 0;
}

void gf_mmcheck_print(const gf_mmcheck *m)
{
    if (!m || !m->report)
        return;
    const gf_check_totals *t = &m->report->totals;
    fprintf(stderr,
            "check: %llu audit messages, %llu tickets (%llu revisions), %llu committed and "
            "%llu aborted matches, %llu players\n",
            (unsigned long long)m->messages, (unsigned long long)t->tickets,
            (unsigned long long)t->ticket_revisions, (unsigned long long)t->matches_committed,
            (unsigned long long)t->matches_aborted, (unsigned long long)t->players);
    for (size_t i = 0; i < m->report->counts_len; i++) {
        const gf_check_count *c = &m->report->counts[i];
        if (!c->checked || c->name[0] == 'e') /* the event-log counts: not fed here */
            continue;
        fprintf(stderr, "check: %s=%llu%s%s%s\n", c->name, (unsigned long long)c->count,
                c->detail[0] ? " (" : "", c->detail, c->detail[0] ? ")" : "");
        for (size_t k = 0; c->count && k < c->examples_len; k++)
            fprintf(stderr, "check:   %s\n", c->examples[k]);
    }
}
