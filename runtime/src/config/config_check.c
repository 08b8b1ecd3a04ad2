/*
 * config_check.c — semantic checks (see config_check.h), and the bucket and stream name
 * checks validate hooks share (gf_cfg_bucket_ok, gf_cfg_stream_ok: gamefn/config.h).
 *
 * Design notes: checking names (gamefn/names.h, from the table's validate hooks) and
 * these rules at load time turns a provisioning failure at runtime into a config error
 * with a line number. Cross-object checks sort the names once (O(n log n)), so a file
 * with 200,000 assets is checked as fast as it is parsed.
 */
#include "config_check.h"

#include "config_error.h"
#include "gamefn/names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_ctl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

const char *gf__cfg_check_server_url(const char *url)
{
    if (!url || !*url)
        return "is empty";
    for (const char *p = url; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == ' ' || is_ctl(c))
            return "contains whitespace or a control character";
        if (c == ',')
            return "contains ',' (list each server as its own entry)";
    }
    const char *sep = strstr(url, "://");
    if (sep) {
        size_t n = (size_t)(sep - url);
        if (!((n == 4 && strncmp(url, "nats", 4) == 0) || (n == 3 && strncmp(url, "tls", 3) == 0)))
            return "has a scheme other than nats:// or tls://";
        if (!sep[3])
            return "has no host";
    }
    return NULL;
}

bool gf__cfg_inbox_prefix_ok(const char *prefix)
{
    size_t n = strlen(prefix), token = 0;
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i <= n; i++) {
        char c = prefix[i];
        if (c == '.' || c == 0) {
            if (token == 0)
                return false;
            token = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '_' || c == '-') {
            token++;
        } else {
            return false;
        }
    }
    return true;
}

bool gf__cfg_check_nats_auth(const gf_nats_config *n, gf_cfg_problem *p)
{
    bool creds = n->credentials != NULL;
    bool seed = n->nkey_seed != NULL;
    bool userpass = n->user != NULL || n->password != NULL;
    if (creds && (seed || userpass)) {
        p->key = "credentials";
        snprintf(p->text, sizeof(p->text),
                 "credentials cannot be combined with %s: choose one "
                 "way to authenticate",
                 seed ? "nkey_seed" : "user/password");
        return false;
    }
    if (seed && userpass) {
        p->key = "nkey_seed";
        snprintf(p->text, sizeof(p->text),
                 "nkey_seed cannot be combined with user/password: "
                 "choose one way to authenticate");
        return false;
    }
    if (n->password && !n->user) {
        p->key = "password";
        snprintf(p->text, sizeof(p->text), "password is set but user is not");
        return false;
    }
    return true;
}

/* line:column of `key` in item i of list `list` under the jetstream node. */
static void item_mark(const cfg_node *js_node, const char *list, size_t i, const char *key,
                      int *line, int *col)
{
    const cfg_node *item = gf__cfg_node_at(gf__cfg_node_get(js_node, list), i);
    const cfg_node *v = gf__cfg_node_get(item, key);
    const cfg_node *best = v ? v : item ? item : js_node;
    *line = best ? best->line : 0;
    *col = best ? best->column : 0;
}

static gf_err fail_at(cfg_walk *w, const cfg_node *js_node, const char *list, size_t i,
                      const char *key, const char *what, const char *name, int first_line)
{
    int line = 0, col = 0;
    char path[64];
    item_mark(js_node, list, i, key, &line, &col);
    snprintf(path, sizeof(path), "%s[%zu].%s", list, i, key);
    size_t saved = gf__cfg_walk_push_key(w, path);
    gf_err rc;
    if (first_line > 0)
        rc = gf__cfg_walk_fail(w, line, col, "%s '%s' (first at line %d)", what, name, first_line);
    else
        rc = gf__cfg_walk_fail(w, line, col, "%s '%s'", what, name);
    gf__cfg_walk_pop(w, saved);
    return rc;
}

static int line_of(const cfg_node *js_node, const char *list, size_t i)
{
    int line = 0, col = 0;
    item_mark(js_node, list, i, "name", &line, &col);
    return line;
}

/* ---- duplicates and lookups in O(n log n) -------------------------------- */

static int key_cmp(const void *pa, const void *pb)
{
    const cfg_key *a = pa, *b = pb;
    int c = strcmp(a->a, b->a);
    if (c == 0 && (a->b || b->b))
        c = !a->b ? -1 : !b->b ? 1 : strcmp(a->b, b->b);
    if (c == 0)
        c = a->index < b->index ? -1 : a->index > b->index;
    return c;
}

static bool key_same(const cfg_key *x, const cfg_key *y)
{
    return strcmp(x->a, y->a) == 0 && (x->b == y->b || (x->b && y->b && strcmp(x->b, y->b) == 0));
}

bool gf__cfg_find_duplicate(cfg_key *keys, size_t n, size_t *first, size_t *dup)
{
    bool found = false;
    if (n < 2)
        return false;
    qsort(keys, n, sizeof *keys, key_cmp);
    /* Equal keys are now adjacent, each run in document order: a run's second entry is
     * its earliest repeat. Report the repeat that comes first in the document. */
    for (size_t i = 1; i < n; i++) {
        if (!key_same(&keys[i - 1], &keys[i]) || (i >= 2 && key_same(&keys[i - 2], &keys[i])))
            continue;
        if (!found || keys[i].index < *dup) {
            *first = keys[i - 1].index;
            *dup = keys[i].index;
            found = true;
        }
    }
    return found;
}

/* Is `a` among sorted single-name keys? */
static bool sorted_has(const cfg_key *keys, size_t n, const char *a)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(keys[mid].a, a);
        if (c == 0)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* A stream's sources and mirror name a configured stream or the KV_<bucket> of a
 * configured bucket (the server would otherwise wait for the stream forever, silently).
 * `streams` and `buckets` are the sorted name keys. */
static bool stream_known(const cfg_key *streams, size_t ns, const cfg_key *buckets, size_t nb,
                         const char *name)
{
    return sorted_has(streams, ns, name) ||
           (strncmp(name, "KV_", 3) == 0 && sorted_has(buckets, nb, name + 3));
}

static gf_err check_sources(cfg_walk *w, const gf_jetstream_config *js, const cfg_node *js_node,
                            const cfg_key *streams, const cfg_key *buckets)
{
    static const char what[] = "is neither a stream in jetstream.streams nor KV_<bucket> of one "
                               "in jetstream.buckets:";
    size_t ns = js->streams_len, nb = js->buckets_len;
    for (size_t i = 0; i < js->streams_len; i++) {
        const gf_stream_config *s = &js->streams[i];
        for (size_t k = 0; k < s->sources_len; k++) {
            if (!stream_known(streams, ns, buckets, nb, s->sources[k]))
                return fail_at(w, js_node, "streams", i, "sources", what, s->sources[k], 0);
        }
        if (s->mirror && !stream_known(streams, ns, buckets, nb, s->mirror))
            return fail_at(w, js_node, "streams", i, "mirror", what, s->mirror, 0);
    }
    return GF_OK;
}

static gf_err nomem(cfg_walk *w)
{
    gf__cfg_error_set(w->err, w->file, 0, 0, w->path, "out of memory");
    return GF_ERR_NOMEM;
}

gf_err gf__cfg_check_jetstream(cfg_walk *w, const gf_jetstream_config *js, const cfg_node *js_node)
{
    cfg_key *streams = calloc(js->streams_len + 1, sizeof *streams);
    cfg_key *buckets = calloc(js->buckets_len + 1, sizeof *buckets);
    cfg_key *consumers = calloc(js->consumers_len + 1, sizeof *consumers);
    gf_err rc = GF_OK;
    size_t first = 0, dup = 0;
    if (!streams || !buckets || !consumers) {
        rc = nomem(w);
        goto out;
    }
    for (size_t i = 0; i < js->streams_len; i++)
        streams[i] = (cfg_key){js->streams[i].name, NULL, i};
    for (size_t i = 0; i < js->buckets_len; i++)
        buckets[i] = (cfg_key){js->buckets[i].name, NULL, i};

    /* Sorting reorders: keep `streams` and `buckets` sorted for the lookups below and
     * find duplicates in them (their index says where each name was). */
    if (gf__cfg_find_duplicate(streams, js->streams_len, &first, &dup)) {
        rc = fail_at(w, js_node, "streams", dup, "name", "duplicate stream name",
                     js->streams[dup].name, line_of(js_node, "streams", first));
        goto out;
    }
    if (gf__cfg_find_duplicate(buckets, js->buckets_len, &first, &dup)) {
        rc = fail_at(w, js_node, "buckets", dup, "name", "duplicate bucket name",
                     js->buckets[dup].name, line_of(js_node, "buckets", first));
        goto out;
    }
    for (size_t i = 0; i < js->streams_len; i++) {
        const char *name = js->streams[i].name;
        if (strncmp(name, "KV_", 3) == 0 && sorted_has(buckets, js->buckets_len, name + 3)) {
            rc = fail_at(w, js_node, "streams", i, "name",
                         "stream name is the backing stream of bucket", name + 3, 0);
            goto out;
        }
    }
    for (size_t i = 0; i < js->consumers_len; i++) {
        const gf_consumer_config *c = &js->consumers[i];
        if (!sorted_has(streams, js->streams_len, c->stream)) {
            rc = fail_at(w, js_node, "consumers", i, "stream",
                         "consumer refers to a stream that is not in jetstream.streams:", c->stream,
                         0);
            goto out;
        }
        if (c->partitions > 0 && !sorted_has(buckets, js->buckets_len, c->lease_bucket)) {
            rc = fail_at(w, js_node, "consumers", i, "lease_bucket",
                         "partitioned group's lease bucket is not in jetstream.buckets:",
                         c->lease_bucket, 0);
            goto out;
        }
        consumers[i] = (cfg_key){c->stream, c->name, i};
    }
    if (gf__cfg_find_duplicate(consumers, js->consumers_len, &first, &dup))
        rc = fail_at(w, js_node, "consumers", dup, "name",
                     "duplicate consumer on this stream:", js->consumers[dup].name,
                     line_of(js_node, "consumers", first));
    else
        rc = check_sources(w, js, js_node, streams, buckets);
out:
    free(streams);
    free(buckets);
    free(consumers);
    return rc;
}

/* The name check and the problem's wording (see gamefn/config.h). */
static bool name_ok(bool ok, const char *what, const char *why, const char *key, gf_cfg_problem *p)
{
    if (ok)
        return true;
    p->key = key;
    snprintf(p->text, sizeof p->text, "%s name %s", what, why);
    return false;
}

bool gf_cfg_bucket_ok(const char *name, const char *key, gf_cfg_problem *p)
{
    char why[GF_NAME_WHY_MAX];
    return name_ok(gf_name_bucket_ok(name, why, sizeof why), "bucket", why, key, p);
}

bool gf_cfg_stream_ok(const char *name, const char *key, gf_cfg_problem *p)
{
    char why[GF_NAME_WHY_MAX];
    return name_ok(gf_name_asset_ok(name, why, sizeof why), "stream", why, key, p);
}
