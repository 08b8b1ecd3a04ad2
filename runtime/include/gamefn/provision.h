/*
 * gamefn/provision.h — ensure JetStream streams, consumers and KV buckets exist
 * with the settings in config (gf_jetstream_config).
 *
 * Contract:
 *  - absent -> created with exactly the configured settings (GF_PROVISION_CREATED);
 *  - present and equal on every configured field -> nothing is sent (UNCHANGED);
 *    provisioning twice therefore changes nothing;
 *  - present but different -> GF_ERR_CONFLICT with a message naming the asset,
 *    the field and both values ("stream EVENTS: max_age is 1h on the server,
 *    7d in config"). Nothing is changed, deleted or recreated, unless `update`
 *    is true AND every differing field is one the server can edit in place
 *    (then UPDATED; immutable differences such as storage or retention stay
 *    conflicts).
 *  A KV bucket is checked through its backing stream KV_<bucket>.
 *
 * Logging: one line per asset provisioned (created, unchanged, updated; warn when the
 * server keeps a value other than the configured one). A failure is not logged here: it
 * is returned, with res->message naming the asset and what is wrong, for the caller to
 * log once where it handles it.
 *
 * Threads: synchronous, call from one thread. The jsCtx is borrowed.
 */
#ifndef GAMEFN_PROVISION_H
#define GAMEFN_PROVISION_H

#include <stdbool.h>
#include <stddef.h>

#include <nats/nats.h>

#include "gamefn/config.h"
#include "gamefn/err.h"

typedef enum gf_provision_outcome {
    GF_PROVISION_CREATED,
    GF_PROVISION_UNCHANGED,
    GF_PROVISION_UPDATED,
} gf_provision_outcome;

typedef struct gf_provision_result {
    gf_provision_outcome outcome;
    char message[512]; /* on error or update: what differs / what failed */
} gf_provision_result;

gf_err gf_provision_stream(jsCtx *js, const gf_stream_config *cfg, bool update,
                           gf_provision_result *res);
/* A partitioned group (cfg->partitions > 0) is provisioned as its durables
 * "<name>-p<NN>" in turn (gf_config_consumer_partition), stopping at the first failure;
 * the outcome is CREATED if any was created, else UPDATED if any was updated. */
gf_err gf_provision_consumer(jsCtx *js, const gf_consumer_config *cfg, bool update,
                             gf_provision_result *res);
gf_err gf_provision_bucket(jsCtx *js, const gf_bucket_config *cfg, bool update,
                           gf_provision_result *res);

/* The asset of that name in cfg's jetstream section, as above. When config has none:
 * GF_ERR_CONFIG, with res->message "stream NAME is not in config (jetstream.streams)"
 * (buckets, consumers alike). For what a function declares it uses by name. */
gf_err gf_provision_stream_named(jsCtx *js, const gf_config *cfg, const char *name,
                                 gf_provision_result *res);
gf_err gf_provision_bucket_named(jsCtx *js, const gf_config *cfg, const char *name,
                                 gf_provision_result *res);
gf_err gf_provision_consumer_named(jsCtx *js, const gf_config *cfg, const char *stream,
                                   const char *name, gf_provision_result *res);

/* Everything in `js_cfg`: streams first, then buckets, then consumers. Stops at the first error,
 * with res->message naming the asset. */
gf_err gf_provision_all(jsCtx *js, const gf_jetstream_config *js_cfg, bool update,
                        gf_provision_result *res);

#endif
