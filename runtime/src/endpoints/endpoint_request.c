/*
 * endpoint_request.c — request/reply endpoints on a queue group.
 *
 * Design notes:
 * - The handler runs on nats.c's delivery thread for this subscription: one request
 *   at a time per endpoint and instance; scale by adding instances.
 * - Error replies follow the NATS services protocol: headers Nats-Service-Error-Code
 *   and Nats-Service-Error, plus a gamefn.v1.Error body so protobuf clients get a
 *   typed code without parsing headers.
 * - Shutdown drains the subscription: the server stops routing new requests to this
 *   instance and the ones already delivered are answered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoints/endpoint.h"
#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/wire_error.h"
#include "nats/nats_err.h"

/* The handler's own wire code when it set a valid one, else the gf_err's. */
static gf_err build_error(gf_wire_error *e, gf_err err, const gf_reply *reply)
{
    const char *field = reply->field[0] ? reply->field : NULL;
    const char *text = reply->error[0] ? reply->error : gf_err_str(err);
    if (reply->code != 0 &&
        gf_wire_error_build(e, reply->code, field, reply->retry_after_ms, "%s", text) == GF_OK)
        return GF_OK;
    return gf_wire_error_build(e, gf_wire_code_from_err(err), field, reply->retry_after_ms,
                               "%s: %s", gf_err_str(err), text);
}

static natsStatus send_error(natsConnection *nc, const char *reply_to, gf_err err,
                             const gf_reply *reply)
{
    gf_wire_error e;
    natsMsg *m = NULL;
    natsStatus s = NATS_NO_MEMORY;
    if (build_error(&e, err, reply) == GF_OK)
        s = natsMsg_Create(&m, reply_to, NULL, (const char *)e.body, (int)e.body_len);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, GF_WIRE_HDR_ERROR_CODE, e.code_header);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, GF_WIRE_HDR_ERROR, e.message);
    if (s == NATS_OK)
        s = natsConnection_PublishMsg(nc, m);
    natsMsg_Destroy(m);
    gf_wire_error_fini(&e);
    return s;
}

static void on_request(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    gf__endpoint_run *run = closure;
    int64_t start = gf_clock_mono_ns();
    gf_msg req = {
        .subject = natsMsg_GetSubject(m),
        .data = (const uint8_t *)natsMsg_GetData(m),
        .len = (size_t)natsMsg_GetDataLength(m),
        .nats = m,
    };
    gf_reply reply = {0};
    gf_err err = run->ep->request.on_request(run->host->fn, &req, &reply);

    const char *reply_to = natsMsg_GetReply(m);
    if (reply_to && reply_to[0]) {
        natsStatus s = err == GF_OK
                           ? natsConnection_Publish(nc, reply_to, reply.data, (int)reply.len)
                           : send_error(nc, reply_to, err, &reply);
        if (s != NATS_OK)
            gf_log_warn("reply not sent", "endpoint=%s status=%d", run->ep->name, (int)s);
    }
    gf__endpoint_record(run, start, err, reply.error);
    free(reply.data);
    natsMsg_Destroy(m);
}

static gf_err request_start(gf__endpoint_run *run)
{
    const gf_request_endpoint *rq = &run->ep->request;
    natsConnection *nc = run->host->nc;
    if (!rq->subject || !rq->on_request)
        return GF_ERR_INVALID;
    natsStatus s = rq->queue_group
                       ? natsConnection_QueueSubscribe(&run->sub, nc, rq->subject, rq->queue_group,
                                                       on_request, run)
                       : natsConnection_Subscribe(&run->sub, nc, rq->subject, on_request, run);
    if (s == NATS_OK) /* make sure the server knows the subscription before we say "started" */
        s = natsConnection_Flush(nc);
    return gf__nats_err(s);
}

static bool request_stop(gf__endpoint_run *run, int64_t deadline_ms)
{
    return gf__endpoint_drain_subscription(run, deadline_ms);
}

static void request_describe(const gf__endpoint_run *run, gf_srv_endpoint *out)
{
    out->subject = run->ep->request.subject;
    out->queue_group = run->ep->request.queue_group;
}

const gf__endpoint_ops gf__endpoint_request_ops = {
    .name = "request",
    .provision = NULL, /* core NATS: nothing to provision */
    .describe = request_describe,
    .start = request_start,
    .stop = request_stop,
};
