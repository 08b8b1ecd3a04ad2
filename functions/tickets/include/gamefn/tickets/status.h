/*
 * gamefn/tickets/status.h — the TicketStatus a client sees, from a record and its KV
 * revision: the body of the ticket replies and of every status push.
 *
 * revision is the tickets bucket's sequence of the record's last write (bucket-wide,
 * so it grows but not by one per ticket). Pushes of one stored state share a revision;
 * the periodic QUEUED pushes (gf_ticket_status_queued) carry fresher diagnostics with a
 * later updated_unix_ms.
 *
 * Ownership: a gf_ticket_status is a SHALLOW view: its strings and the assignment are
 * borrowed from the record; `detail` and `limits` live inside the struct. Keep the
 * record alive while using it. Pure and reentrant.
 */
#ifndef GAMEFN_TICKETS_STATUS_H
#define GAMEFN_TICKETS_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/limits.h"
#include "gamefn/v1/ticket.pb-c.h"

typedef struct gf_ticket_status {
    Gamefn__V1__TicketStatus st;
    Gamefn__V1__TicketLimits limits;
    char detail[GF_WIRE_TEXT_MAX + 1];
} gf_ticket_status;

/* The status of `rec` as stored at `revision`: state, reason, a detail sentence for the
 * reason, times, queue, match id (CLAIMED, ASSIGNED), assignment (ASSIGNED), and for a
 * QUEUED ticket the limits and estimate stored in the record. `note` (may be NULL or "")
 * replaces the detail sentence. */
void gf_ticket_status_of(const Gamefn__V1__TicketRecord *rec, uint64_t revision, const char *note,
                         gf_ticket_status *out);

/* A QUEUED push with the last tick's diagnosis: its reason (SKILL, PING, ...), the
 * ticket's current limits, the remaining wait estimate in ms (0 = none), at now_ms. */
void gf_ticket_status_queued(const Gamefn__V1__TicketRecord *rec, uint64_t revision,
                             Gamefn__V1__TicketReason reason,
                             const Gamefn__V1__TicketLimits *limits, uint32_t estimated_wait_ms,
                             int64_t now_ms, gf_ticket_status *out);

/* Packs out->st into a malloc'd buffer (caller frees). GF_ERR_NOMEM. */
gf_err gf_ticket_status_pack(const gf_ticket_status *s, uint8_t **buf, size_t *len);

/* The sentence a status carries for a reason (static, never NULL). */
const char *gf_ticket_reason_detail(int reason);

#endif
