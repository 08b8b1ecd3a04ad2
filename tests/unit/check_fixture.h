/*
 * check_fixture.h — hand-built record sequences for the checker's unit tests: tickets,
 * match commit records and players records as the functions would write them (packed
 * with the generated schemas), fed to a gf_check with increasing revisions and times.
 *
 * Times are milliseconds from a fixed base (T0, a Unix time); a record written "at" a
 * time gets that time as its server time. The queue table: datacenters eu-west (eu) and
 * us-east (na); queues duel (hybrid 1v1), sduel (sbmm 1v1), pduel (ping_first 1v1),
 * pair (hybrid 2v2), all with the reference curves and a 60 s TTL.
 *
 * Ownership: ck_fx_start allocates the checker, ck_fx_end frees it. Single-threaded.
 */
#ifndef GAMEFN_TEST_CHECK_FIXTURE_H
#define GAMEFN_TEST_CHECK_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/check/check.h"

#define T0 INT64_C(1790000000000)

typedef struct ck_fx {
    gf_check *c;
    gf_match_config cfg;
    gf_match_queue queues[4];
    gf_match_dc dcs[2];
    uint64_t seq_tickets, seq_matches, seq_players;
    const gf_check_report *r;
} ck_fx;

/* A ticket's request: players "a,b" with ratings, pings "eu-west:20,us-east:90". */
typedef struct fx_ticket {
    const char *id;
    const char *queue;
    const char *players;
    double ratings[4];
    const char *pings;
    int64_t created; /* ms after T0; also the queue time */
} fx_ticket;

/* Starts a checker whose history ends at T0 + now (grace 5 s, 5 examples). */
void ck_fx_start(ck_fx *f, int64_t now);
/* The same with the parameters adjusted by the caller first (p from gf_check_params
 * _default, queues and now filled in). */
void ck_fx_start_with(ck_fx *f, gf_check_params *p);

/* Ticket writes (state from ticket.proto numbers). at: ms after T0. */
void fx_queued(ck_fx *f, const fx_ticket *t, int64_t at);
void fx_claimed(ck_fx *f, const fx_ticket *t, const char *match, int64_t at);
void fx_assigned(ck_fx *f, const fx_ticket *t, const char *match, const char *dc, int64_t at);
void fx_cancelled(ck_fx *f, const fx_ticket *t, int64_t at);
void fx_timed_out(ck_fx *f, const fx_ticket *t, int64_t at);
void fx_ticket_deleted(ck_fx *f, const char *id, int64_t at);
void fx_ticket_garbage(ck_fx *f, const char *id, int64_t at);

/* Commit records. tickets: "t1,t2". */
void fx_committed(ck_fx *f, const char *match, const char *tickets, const char *dc, int64_t at);
void fx_aborted(ck_fx *f, const char *match, int64_t at);

/* Players records. */
void fx_player(ck_fx *f, const char *player, const char *ticket, int64_t at);
void fx_player_deleted(ck_fx *f, const char *player, int64_t at);

/* Both queued at q and claimed by `match` at `claim`; when dc is not NULL, the match is
 * committed in dc and both are assigned at claim + 50. */
void fx_pair(ck_fx *f, const fx_ticket *a, const fx_ticket *b, const char *match, int64_t q,
             int64_t claim, const char *dc);
/* A whole clean match of two tickets: their players records, then fx_pair at q, claimed at
 * q + 100, in eu-west. */
void fx_match(ck_fx *f, const fx_ticket *a, const fx_ticket *b, const char *match, int64_t q);

/* A packed GameEvent of `source` seq `seq` for `player`: a ScoreEvent of `delta` on
 * `board` when board is not NULL, else a zone change. Its subject (partition 3) into
 * subject. Returns the length written into buf (512 bytes are enough). */
size_t fx_event_pack(const char *source, uint64_t seq, const char *player, const char *board,
                     int64_t delta, uint8_t *buf, char *subject, size_t subject_size);

/* Finishes; f->r is the report. */
void ck_fx_finish(ck_fx *f);
/* The count named `name` (fails the test when unknown). */
uint64_t fx_count(ck_fx *f, const char *name);
/* Every checked count is 0, else prints the report and fails. */
void fx_all_zero(ck_fx *f);
/* Exactly count `name` is `n` and every other checked count (but `also`, may be NULL,
 * a comma-separated list of names allowed to be non-zero) is 0. */
void fx_only(ck_fx *f, const char *name, uint64_t n, const char *also);
void fx_print(const ck_fx *f);
void ck_fx_end(ck_fx *f);

#endif
