/*
 * config_check.h — private: semantic checks that no single row can express: server
 * URLs, authentication options that exclude each other, and the checks across objects
 * of the jetstream section (duplicate names, a consumer on a stream that is not
 * configured). Names and subjects are checked with gamefn/names.h, the rules every
 * other part of the runtime uses.
 *
 * The URL check returns NULL when fine, otherwise a static phrase for the caller's
 * message. Nothing here allocates.
 */
#ifndef GAMEFN_CONFIG_CHECK_H
#define GAMEFN_CONFIG_CHECK_H

#include "config_walk.h"
#include "gamefn/config.h"

/* A partitioned group's name: "<group>-p<NN>" must stay a valid consumer name. */
enum { GF_CFG_GROUP_MAX = 200 };

/* One server URL: "nats://host:port", "tls://host:port" or "host:port". */
const char *gf__cfg_check_server_url(const char *url);

/* A client inbox prefix: 1..128 bytes, tokens of [A-Za-z0-9_-] joined by '.'. */
bool gf__cfg_inbox_prefix_ok(const char *prefix);

/* credentials, nkey_seed and user/password exclude each other; a password needs a
 * user. Fills *p and returns false on a conflict. */
bool gf__cfg_check_nats_auth(const gf_nats_config *n, gf_cfg_problem *p);

/* A name, or a pair of names (b may be NULL), at position `index` of a list. */
typedef struct cfg_key {
    const char *a, *b;
    size_t index;
} cfg_key;

/* Sorts `keys` (reordering them) and finds the repeat that comes first in document
 * order: true, with *dup its index and *first the index of the same key's first
 * entry. O(n log n): configs with hundreds of thousands of entries are checked in
 * well under a second. */
bool gf__cfg_find_duplicate(cfg_key *keys, size_t n, size_t *first, size_t *dup);

/* Across objects: duplicate stream, bucket and consumer names, a stream named like a
 * bucket's backing stream (KV_<bucket>), consumers whose stream is not configured.
 * `js_node` is the jetstream mapping (NULL when absent), used for line:column. */
gf_err gf__cfg_check_jetstream(cfg_walk *w, const gf_jetstream_config *js, const cfg_node *js_node);

#endif
