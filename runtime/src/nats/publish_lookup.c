/*
 * publish_lookup.c — asks a stream's leader for one message of a subject, for the
 * publisher's CAS decisions (see gamefn/publish.h, "KV compare-and-set").
 *
 * Design notes:
 * - The leader, not a direct get: KV buckets allow direct gets, which any replica
 *   answers, and nats-server 2.9.10 lets a follower keep answering while it lags.
 *   A CAS decision must see at least what the leader used to refuse the CAS, so
 *   this goes through $JS.API.STREAM.MSG.GET, which only the leader answers.
 * - nats.c 3.4.1's js_GetLastMsg covers "last", but nothing covers "first at or after
 *   a sequence" (next_by_subj), so the request is built here and its answer read by
 *   gf__publish_stored_parse.
 * - Runs on the publisher's retry thread, synchronously: lookups are rare (a CAS
 *   refused after an uncertain attempt, or a create over an existing key).
 */
#include "publish_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "nats_err.h"

gf_err gf__publish_lookup(natsConnection *nc, const char *api_prefix, const char *stream,
                          const char *subject, bool next, uint64_t from, int64_t timeout_ms,
                          gf__pub_stored *out)
{
    char api[512];
    char *body = NULL;
    natsMsg *reply = NULL;
    json_t *req = NULL;
    gf_err err = GF_ERR_NOMEM;

    int n = snprintf(api, sizeof api, "%s.STREAM.MSG.GET.%s", api_prefix, stream);
    if (n < 0 || (size_t)n >= sizeof api)
        return GF_ERR_INVALID;
    if (next)
        req = json_pack("{sIss}", "seq", (json_int_t)from, "next_by_subj", subject);
    else
        req = json_pack("{ss}", "last_by_subj", subject);
    if (req)
        body = json_dumps(req, JSON_COMPACT);
    if (!body)
        goto out;
    natsStatus s =
        natsConnection_RequestString(&reply, nc, api, body, timeout_ms > 0 ? timeout_ms : 1);
    if (s == NATS_OK && natsMsg_IsNoResponders(reply))
        s = NATS_NO_RESPONDERS;
    if (s != NATS_OK) {
        err = gf_nats_err(s);
        goto out;
    }
    err =
        gf__publish_stored_parse(natsMsg_GetData(reply), (size_t)natsMsg_GetDataLength(reply), out);
out:
    natsMsg_Destroy(reply);
    free(body);
    json_decref(req);
    return err;
}
