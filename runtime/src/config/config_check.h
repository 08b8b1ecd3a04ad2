/*
 * config_check.h — private: semantic checks that no single row can express: names
 * NATS would refuse, subject syntax, authentication options that exclude each other,
 * and the checks across objects of the jetstream section (duplicate names, a consumer
 * on a stream that is not configured).
 *
 * The name/subject checks return NULL when fine, otherwise a static phrase for the
 * caller's message. Nothing here allocates.
 */
#ifndef GAMEFN_CONFIG_CHECK_H
#define GAMEFN_CONFIG_CHECK_H

#include "config_walk.h"
#include "gamefn/config.h"

enum {
    CFG_NAME_MAX = 255,
    CFG_INSTANCE_ID_MAX = 64,
    GF_CFG_GROUP_MAX = 200, /* a partitioned group: "<group>-p<NN>" stays a valid name */
};

/* Stream and consumer names: no whitespace, '.', '*', '>', '/', '\\', control bytes. */
const char *gf__cfg_check_name(const char *name);
/* KV bucket names: [A-Za-z0-9_-]+ (what nats.c and the server accept). */
const char *gf__cfg_check_bucket_name(const char *name);
/* Subject (wildcards '*' and a final '>' allowed): non-empty tokens, no whitespace. */
const char *gf__cfg_check_subject(const char *subject);
/* runtime.instance_id: [A-Za-z0-9_-], 1..64 bytes (it becomes part of keys and ids). */
const char *gf__cfg_check_instance_id(const char *id);
/* One server URL: "nats://host:port", "tls://host:port" or "host:port". */
const char *gf__cfg_check_server_url(const char *url);

/* credentials, nkey_seed and user/password exclude each other; a password needs a
 * user. Fills *p and returns false on a conflict. */
bool gf__cfg_check_nats_auth(const gf_nats_config *n, gf_cfg_problem *p);

/* Across objects: duplicate stream, bucket and consumer names, a stream named like a
 * bucket's backing stream (KV_<bucket>), consumers whose stream is not configured.
 * `js_node` is the jetstream mapping (NULL when absent), used for line:column. */
gf_err gf__cfg_check_jetstream(cfg_walk *w, const gf_jetstream_config *js, const cfg_node *js_node);

#endif
