/*
 * query.h — asking a gamefn function a question (request/reply, protobuf bodies, typed
 * error replies) and the event-log functions' answers as JSON. One implementation for
 * the CLI (`gamefn analytics --json`, `gamefn crashes --json`, every command's requests
 * through gf_cli_request) and for the simulated game's end-of-run reading
 * (support/playsim), so that the run report holds exactly what the CLI prints.
 *
 * Ownership: *out replies are the caller's (protobuf_c_message_free_unpacked); JSON
 * results are new references. Threads: any; nothing is shared.
 */
#ifndef GAMEFN_CLI_QUERY_H
#define GAMEFN_CLI_QUERY_H

#include <jansson.h>
#include <stdint.h>

#include <nats/nats.h>
#include <protobuf-c/protobuf-c.h>

#include "gamefn/v1/analytics.pb-c.h"
#include "gamefn/v1/crashes.pb-c.h"
#include "gamefn/wire_error.h"

typedef enum gf_query_result {
    GF_QUERY_OK = 0,
    GF_QUERY_NO_SERVICE,  /* no responders: no instance of the function runs */
    GF_QUERY_TIMEOUT,     /* no answer within the timeout */
    GF_QUERY_FAILED,      /* the request itself failed: `status` says how */
    GF_QUERY_ERROR_REPLY, /* the function answered with a typed error: `wire` */
    GF_QUERY_UNDECODABLE, /* the answer is not the expected message */
} gf_query_result;

typedef struct gf_query_error {
    natsStatus status;  /* GF_QUERY_FAILED */
    gf_wire_error wire; /* GF_QUERY_ERROR_REPLY: code, message, field */
} gf_query_error;

/* Sends `req` packed on `subject` and waits up to timeout_ms. GF_QUERY_OK with the answer
 * decoded as `desc` in *out; otherwise *out is NULL and `err` (may be NULL) says why. */
gf_query_result gf_query(natsConnection *nc, const char *subject, const ProtobufCMessage *req,
                         const ProtobufCMessageDescriptor *desc, int64_t timeout_ms,
                         ProtobufCMessage **out, gf_query_error *err);

/* `gamefn analytics --json`: {from_unix_ms, to_unix_ms, group_by, total, counts: [{name,
 * count}], other, unattributed, minutes: [{minute_unix_ms, total, counts, other,
 * unattributed}], records}. NULL when out of memory. */
json_t *gf_query_analytics_json(const Gamefn__V1__AnalyticsQueryReply *r);

/* `gamefn crashes --json` for a top query: {top: [{fingerprint, count,
 * first_seen_unix_ms, last_seen_unix_ms, signature, message, build, platform, builds}],
 * fingerprints, crashes}. NULL when out of memory. */
json_t *gf_query_crashes_top_json(const Gamefn__V1__CrashesQueryReply *r);

#endif
