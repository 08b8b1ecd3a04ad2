/*
 * ticket_print.h — a TicketStatus as the CLI shows it: a block of text, one line (watch),
 * or JSON with the enums by name. Names come from the generated descriptors, so the CLI
 * needs nothing of the functions' tickets library.
 */
#ifndef GAMEFN_CLI_TICKET_PRINT_H
#define GAMEFN_CLI_TICKET_PRINT_H

#include <jansson.h>
#include <stdbool.h>

#include "gamefn/v1/ticket.pb-c.h"

/* "QUEUED", "ASSIGNED", ...; "UNKNOWN" for numbers this build does not know. */
const char *gf_cli_state_name(int state);
const char *gf_cli_reason_name(int reason);
/* ASSIGNED, CANCELLED, TIMED_OUT */
bool gf_cli_state_terminal(int state);

/* The status as a JSON object (new reference). */
json_t *gf_cli_status_json(const Gamefn__V1__TicketStatus *st);
/* Prints st: JSON (one line when `line`), else a block of text (one line when `line`). */
void gf_cli_status_print(const Gamefn__V1__TicketStatus *st, bool json, bool line);
/* The answer to ticket.create (the idempotency key used, the id, replayed, the status). */
void gf_cli_created_print(const Gamefn__V1__CreateTicketReply *r, const char *key, bool json);

#endif
