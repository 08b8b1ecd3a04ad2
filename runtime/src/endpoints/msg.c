/* msg.c — accessors handlers use on a received gf_msg. */
#include "endpoints/endpoint.h"
#include "gamefn/clock.h"
#include "nats/nats_err.h"

const char *gf_msg_header(const gf_msg *msg, const char *key)
{
    const char *value = NULL;
    if (!msg || !msg->nats || !key || natsMsgHeader_Get(msg->nats, key, &value) != NATS_OK)
        return NULL;
    return value;
}

gf_err gf_msg_in_progress(const gf_msg *msg)
{
    /* Only JetStream messages (pull endpoints) have an ack deadline to extend. */
    if (!msg || !msg->nats || msg->stream_seq == 0)
        return GF_ERR_INVALID;
    /* A partition owner past its lease must not keep the message from the next owner. */
    if (msg->owner && gf_clock_mono_ms() >= atomic_load(&msg->owner->valid_until_ms))
        return GF_ERR_CONFLICT;
    return gf_nats_err(natsMsg_InProgress(msg->nats, NULL));
}
