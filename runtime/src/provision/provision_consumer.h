/*
 * provision_consumer.h — private: consumer provisioning for the endpoints that own a
 * consumer (pull and partitioned), beyond gamefn/provision.h.
 */
#ifndef GAMEFN_PROVISION_CONSUMER_H
#define GAMEFN_PROVISION_CONSUMER_H

#include <stdint.h>

#include "gamefn/provision.h"

/* Like gf_provision_consumer() for one plain consumer (never updates), but a consumer
 * that has to be created starts at stream sequence `start_seq` (deliver
 * by_start_sequence) instead of its configured deliver policy; 0 means the policy.
 * An existing consumer is compared as usual. Logs one line like every provisioning. */
gf_err gf__provision_consumer_at(jsCtx *js, const gf_consumer_config *cfg, uint64_t start_seq,
                                 gf_provision_result *res);

#endif
