/*
 * gamefn/names.h — one set of rules for the names and subjects gamefn hands to NATS:
 * ids, JetStream asset names, KV bucket names, subject tokens and subjects. Config,
 * provisioning, $SRV, the wire validators and the function flags all check with these,
 * so a name is accepted in one place exactly when it is accepted in all of them.
 *
 * Each check returns true when the name is fine. Otherwise it writes into `why` (may
 * be NULL) a phrase that reads after the thing's name in a message ("stream name " +
 * "contains one of '.', '*', ..."), and returns false. NULL is never a valid name.
 *
 * The rules are nats-server 2.9's and nats.c 3.4.1's, made stricter where that keeps
 * one name safe everywhere it travels (a subject token, a KV key, a file name).
 * Pure and reentrant; nothing allocates.
 */
#ifndef GAMEFN_NAMES_H
#define GAMEFN_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* A why buffer of this size holds every phrase. */
enum {
    GF_NAME_WHY_MAX = 96,
    GF_NAME_MAX = 255,        /* stream and consumer names: one file name on the server */
    GF_NAME_BUCKET_MAX = 252, /* KV_<bucket> is then at most GF_NAME_MAX */
    GF_NAME_KV_KEY_MAX = 1024,
};

/* An id: 1..max bytes of [A-Za-z0-9_-]. Instance, player, ticket and match ids,
 * service and endpoint names, key ids. */
bool gf_name_id_ok(const char *s, size_t max, char *why, size_t why_size);

/* A stream or consumer (durable) name: 1..GF_NAME_MAX bytes; no whitespace or
 * control byte, none of '.', '*', '>', '/', '\\'. */
bool gf_name_asset_ok(const char *s, char *why, size_t why_size);

/* A KV bucket name: 1..GF_NAME_BUCKET_MAX bytes of [A-Za-z0-9_-]. */
bool gf_name_bucket_ok(const char *s, char *why, size_t why_size);

/* One subject token, e.g. a queue group or an id that ends up in a subject: non-empty,
 * no whitespace or control byte, no '.', '*' or '>'. */
bool gf_name_token_ok(const char *s, char *why, size_t why_size);

/* A subject: tokens separated by single dots, none empty, no whitespace or control
 * byte. With `wildcards`, a token may be '*' and the last token may be '>' (what
 * subscriptions, consumer filters and stream subjects take); a '*' or '>' inside a
 * longer token ("a*b") is refused either way. Without, no wildcard at all (what a
 * publish takes). */
bool gf_name_subject_ok(const char *s, bool wildcards, char *why, size_t why_size);

/* A KV key (nats.c's rule, plus no empty token): 1..GF_NAME_KV_KEY_MAX bytes of
 * [A-Za-z0-9_=/.-], no leading, trailing or doubled '.'. */
bool gf_name_kv_key_ok(const char *s, char *why, size_t why_size);

#endif
