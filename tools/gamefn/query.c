/*
 * query.c — one request to a function (see query.h): what the CLI and the simulated
 * game share; the CLI turns the result into its messages and exit codes (cli_util.c).
 */
#include "query.h"

#include <stdlib.h>
#include <string.h>

gf_query_result gf_query(natsConnection *nc, const char *subject, const ProtobufCMessage *req,
                         const ProtobufCMessageDescriptor *desc, int64_t timeout_ms,
                         ProtobufCMessage **out, gf_query_error *err)
{
    gf_query_error scratch;
    if (!err)
        err = &scratch;
    memset(err, 0, sizeof *err);
    *out = NULL;
    size_t len = protobuf_c_message_get_packed_size(req);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        err->status = NATS_NO_MEMORY;
        return GF_QUERY_FAILED;
    }
    protobuf_c_message_pack(req, buf);
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_Request(&reply, nc, subject, buf, (int)len, timeout_ms);
    free(buf);
    err->status = s;
    if (s == NATS_NO_RESPONDERS)
        return GF_QUERY_NO_SERVICE;
    if (s == NATS_TIMEOUT)
        return GF_QUERY_TIMEOUT;
    if (s != NATS_OK)
        return GF_QUERY_FAILED;
    const char *hcode = NULL, *htext = NULL;
    natsMsgHeader_Get(reply, GF_WIRE_HDR_ERROR_CODE, &hcode);
    natsMsgHeader_Get(reply, GF_WIRE_HDR_ERROR, &htext);
    const uint8_t *data = (const uint8_t *)natsMsg_GetData(reply);
    size_t n = (size_t)natsMsg_GetDataLength(reply);
    gf_query_result r = GF_QUERY_OK;
    if (gf_wire_reply_check(hcode, htext, data, n, &err->wire) != GF_OK)
        r = GF_QUERY_ERROR_REPLY;
    else if (!(*out = protobuf_c_message_unpack(desc, NULL, n, data)))
        r = GF_QUERY_UNDECODABLE;
    natsMsg_Destroy(reply);
    return r;
}
