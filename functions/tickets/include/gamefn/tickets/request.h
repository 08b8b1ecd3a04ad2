/*
 * gamefn/tickets/request.h — ticket requests: the ticket id of an idempotency key, the
 * validation of a CreateTicketRequest against the queue table, and whether a retry is
 * "the same request".
 *
 * Validation (gf_tickets_request_check) runs the wire checks in the order of the
 * request's fields and reports the FIRST problem (precedence: idempotency_key, queue,
 * members — count, then each member in index order: player_id, rating, sigma, then
 * repeated players —, pings — count, then each ping: datacenter, ping_ms, repeats —,
 * attributes, region). It then converts the request into the engine's ticket and calls
 * the engine's own gf_match_ticket_check(), so a ticket intake accepts is a ticket the
 * matcher accepts: intake and matcher never disagree. Every refusal is INVALID_ARGUMENT
 * with Error.field naming the field, e.g.
 *   queue                       unknown queue
 *   members                     no members / party too large (for the wire or the queue)
 *   members[1].player_id        not a token / repeated within the ticket
 *   members[0].rating           NaN, infinite or beyond +-1e6
 *   pings                       none / too many datacenters (more than 32)
 *   pings[3].datacenter         unknown datacenter / repeated
 *   pings[0].ping_ms            above 5000
 *   attributes                  more than 16 entries
 *   attributes[platform]        key not a name token / value too long, invalid UTF-8 or
 *                               with control characters / key repeated
 *   region                      not a configured region
 *
 * Pure (libsodium for the id hash, protobuf-c structs, the engine); reentrant.
 * Everything is borrowed for the duration of a call.
 */
#ifndef GAMEFN_TICKETS_REQUEST_H
#define GAMEFN_TICKETS_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/match/config.h"
#include "gamefn/tickets/problem.h"
#include "gamefn/v1/ticket.pb-c.h"

enum { GF_TICKETS_ID_LEN = 32 }; /* hex characters of a ticket id */

/* ticket_id = lowercase hex of BLAKE2b with a 16-byte output over the key's bytes, so a
 * retry with the same key lands on the same KV key. The key's scope is the whole
 * deployment. GF_ERR_INVALID if the key is not a token of 1..64 bytes. */
gf_err gf_tickets_id(const char *idempotency_key, char out[GF_TICKETS_ID_LEN + 1]);

/* A ticket id as requests carry it (cancel, get): a token of 1..64 bytes, else
 * INVALID_ARGUMENT on `ticket_id`. */
gf_err gf_tickets_id_check(const char *ticket_id, gf_tickets_problem *p);

/* Decodes a request body of `len` bytes: over GF_WIRE_REQUEST_MAX, or not a valid
 * encoding of `desc` -> GF_ERR_INVALID, INVALID_ARGUMENT with an empty field. *out is
 * freed with protobuf_c_message_free_unpacked(*out, NULL). */
gf_err gf_tickets_decode(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
                         ProtobufCMessage **out, gf_tickets_problem *p);

/* The checks described above, at now_ms (the engine checks the queue time). cfg is a
 * prepared engine config. GF_OK, or GF_ERR_INVALID with *p filled. */
gf_err gf_tickets_request_check(const gf_match_config *cfg,
                                const Gamefn__V1__CreateTicketRequest *req, int64_t now_ms,
                                gf_tickets_problem *p);

/* Whether `req` is the request that created `rec` (a retry under the same idempotency
 * key): every field equal — queue, region as sent, members in order (player_id, rating,
 * sigma, compared bit for bit), pings and attributes as sets. GF_OK when the same;
 * otherwise GF_ERR_CONFLICT with FAILED_PRECONDITION naming the first field that
 * differs (in the precedence order above). */
gf_err gf_tickets_request_same(const Gamefn__V1__CreateTicketRequest *req,
                               const Gamefn__V1__TicketRecord *rec, gf_tickets_problem *p);

/* The region a ticket with these pings defaults to: that of its lowest ping, ties to
 * the datacenter listed first in the config; -1 if no ping names a configured
 * datacenter. The engine's rule for GF_MATCH_REGION_AUTO. */
int gf_tickets_default_region(const gf_match_config *cfg, Gamefn__V1__DatacenterPing *const *pings,
                              size_t n);

#endif
