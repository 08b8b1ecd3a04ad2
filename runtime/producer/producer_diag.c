/*
 * producer_diag.c — why publishes get no answer while the connection is up.
 *
 * Design notes. A JetStream publish to a subject no stream captures is answered by
 * the server with "no responders" (a 503 status), and so is one while the stream's
 * leader is being elected, or when the server lacks the event subject mapping (the
 * publish subject gamefn.v1.event.* is then stored nowhere). gf_publish resends on
 * "no responders" until its give-up, so the producer only sees "no answer". Asking
 * JetStream's API which stream captures the subject the server would store
 * (gamefn.v1.evp.<partition>.<player>.<type>) tells the cases apart:
 *   - the API itself has no responders: JetStream is not enabled (or not for this
 *     account): no stream can capture anything;
 *   - it answers with no stream: nothing captures the events: NO_STREAM;
 *   - it names a stream: it exists but does not answer: NO_ANSWER, with the likely
 *     causes (an election, a missing mapping, an overloaded server).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/limits.h"
#include "gamefn/partition.h"
#include "gamefn/subjects.h"
#include "producer_internal.h"

enum { DIAG_TIMEOUT_MS = 2000 };

gf_producer_state gf__producer_diagnose(natsConnection *nc, const char *subject, char *why,
                                        size_t why_size)
{
    static const char prefix[] = GF_WIRE_SUBJ_EVENT ".";
    char player[GF_WIRE_ID_MAX + 1] = "", stored[PR_SUBJECT_MAX + 16];
    const char *rest =
        strncmp(subject, prefix, sizeof prefix - 1) == 0 ? subject + sizeof prefix - 1 : subject;
    const char *dot = strchr(rest, '.');
    size_t n = dot ? (size_t)(dot - rest) : 0;
    if (n == 0 || n > GF_WIRE_ID_MAX) {
        snprintf(why, why_size, "publishes to %s get no answer", subject);
        return GF_PRODUCER_NO_ANSWER;
    }
    memcpy(player, rest, n);
    player[n] = '\0';
    snprintf(stored, sizeof stored, "%s.%u.%s", GF_WIRE_SUBJ_EVENT_PARTITIONED,
             (unsigned)gf_partition_of(player, GF_WIRE_EVENT_PARTITIONS), rest);

    json_t *req = json_pack("{s:s}", "subject", stored);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    natsMsg *reply = NULL;
    natsStatus s = body ? natsConnection_RequestString(&reply, nc, "$JS.API.STREAM.NAMES", body,
                                                       DIAG_TIMEOUT_MS)
                        : NATS_NO_MEMORY;
    free(body);
    gf_producer_state st = GF_PRODUCER_NO_ANSWER;
    if (s == NATS_NO_RESPONDERS) {
        snprintf(why, why_size,
                 "JetStream is not enabled on the server (or for this account): no stream "
                 "captures %s",
                 stored);
        st = GF_PRODUCER_NO_STREAM;
    } else if (s != NATS_OK) {
        snprintf(why, why_size,
                 "publishes to %s get no answer, and neither does the JetStream API (%s)", subject,
                 natsStatus_GetText(s));
    } else {
        json_t *root =
            json_loadb(natsMsg_GetData(reply), (size_t)natsMsg_GetDataLength(reply), 0, NULL);
        json_t *streams = json_object_get(root, "streams");
        const char *name = json_string_value(json_array_get(streams, 0));
        const char *api_error =
            json_string_value(json_object_get(json_object_get(root, "error"), "description"));
        if (json_object_get(root, "error")) {
            snprintf(why, why_size, "publishes to %s get no answer; the JetStream API says: %s",
                     subject, api_error ? api_error : "an error");
        } else if (root && name == NULL) {
            snprintf(why, why_size,
                     "no stream captures %s (create stream EVENTS on gamefn.v1.evp.>: "
                     "`gamefn provision`)",
                     stored);
            st = GF_PRODUCER_NO_STREAM;
        } else if (name) {
            snprintf(why, why_size,
                     "stream %s captures %s but publishes to %s get no answer: its leader is "
                     "being elected, the server lacks the event subject mapping "
                     "(docs/PROTOCOL.md §9), or it is overloaded",
                     name, stored, subject);
        } else {
            snprintf(why, why_size, "publishes to %s get no answer", subject);
        }
        json_decref(root);
    }
    natsMsg_Destroy(reply);
    return st;
}
