/*
 * config_check.c — semantic checks (see config_check.h).
 *
 * Design notes: checking names (gamefn/names.h, from the table's validate hooks) and
 * these rules at load time turns a provisioning failure at runtime into a config error
 * with a line number. Cross-object checks are quadratic in the number of assets, which
 * is a handful.
 */
#include "config_check.h"

#include <stdio.h>
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

static bool stream_known(const gf_jetstream_config *js, const char *name)
{
    for (size_t j = 0; j < js->streams_len; j++) {
        if (strcmp(js->streams[j].name, name) == 0)
            return true;
    }
    for (size_t j = 0; j < js->buckets_len; j++) {
        if (strncmp(name, "KV_", 3) == 0 && strcmp(name + 3, js->buckets[j].name) == 0)
            return true;
    }
    return false;
}

/* A stream's sources and mirror name a configured stream or the KV_<bucket> of a
 * configured bucket (the server would otherwise wait for the stream forever, silently). */
static gf_err check_sources(cfg_walk *w, const gf_jetstream_config *js, const cfg_node *js_node)
{
    static const char what[] = "is neither a stream in jetstream.streams nor KV_<bucket> of one "
                               "in jetstream.buckets:";
    for (size_t i = 0; i < js->streams_len; i++) {
        const gf_stream_config *s = &js->streams[i];
        for (size_t k = 0; k < s->sources_len; k++) {
            if (!stream_known(js, s->sources[k]))
                return fail_at(w, js_node, "streams", i, "sources", what, s->sources[k], 0);
        }
        if (s->mirror && !stream_known(js, s->mirror))
            return fail_at(w, js_node, "streams", i, "mirror", what, s->mirror, 0);
    }
    return GF_OK;
}

gf_err gf__cfg_check_jetstream(cfg_walk *w, const gf_jetstream_config *js, const cfg_node *js_node)
{
    for (size_t i = 0; i < js->streams_len; i++) {
        const char *name = js->streams[i].name;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(js->streams[j].name, name) == 0)
                return fail_at(w, js_node, "streams", i, "name", "duplicate stream name", name,
                               line_of(js_node, "streams", j));
        }
        for (size_t j = 0; j < js->buckets_len; j++) {
            if (strncmp(name, "KV_", 3) == 0 && strcmp(name + 3, js->buckets[j].name) == 0)
                return fail_at(w, js_node, "streams", i, "name",
                               "stream name is the backing stream of bucket", name + 3, 0);
        }
    }
    for (size_t i = 0; i < js->buckets_len; i++) {
        for (size_t j = 0; j < i; j++) {
            if (strcmp(js->buckets[j].name, js->buckets[i].name) == 0)
                return fail_at(w, js_node, "buckets", i, "name", "duplicate bucket name",
                               js->buckets[i].name, line_of(js_node, "buckets", j));
        }
    }
    for (size_t i = 0; i < js->consumers_len; i++) {
        const gf_consumer_config *c = &js->consumers[i];
        bool found = false;
        for (size_t j = 0; j < js->streams_len && !found; j++)
            found = strcmp(js->streams[j].name, c->stream) == 0;
        if (!found)
            return fail_at(
                w, js_node, "consumers", i, "stream",
                "consumer refers to a stream that is not in jetstream.streams:", c->stream, 0);
        for (size_t j = 0; j < i; j++) {
            const gf_consumer_config *o = &js->consumers[j];
            if (strcmp(o->stream, c->stream) == 0 && strcmp(o->name, c->name) == 0)
                return fail_at(w, js_node, "consumers", i, "name",
                               "duplicate consumer on this stream:", c->name,
                               line_of(js_node, "consumers", j));
        }
    }
    return check_sources(w, js, js_node);
}
