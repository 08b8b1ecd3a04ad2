/*
 * config_yaml.c — libyaml events -> cfg_node tree (see config_yaml.h).
 *
 * Design notes: the event API (rather than yaml_parser_load) is used because the
 * document API silently turns an alias into a shared node, so refusing aliases with
 * their position needs the events. The tree is built with an
 * explicit stack of open collections, never recursion, and children are linked
 * lists so nothing is reallocated while the tree grows. libyaml reports reader
 * errors (bad UTF-8, control bytes) by byte offset only, so line:column is computed
 * from the input for those.
 */
#include "config_yaml.h"

#include <string.h>
#include <yaml.h>

#include "config_arena.h"
#include "config_error.h"

typedef struct builder {
    const char *file;
    const char *text;
    size_t len;
    struct gf_config_arena *arena;
    gf_config_error *err;
    cfg_node *root;
    cfg_node *stack[CFG_YAML_MAX_DEPTH];
    int depth;
    int documents;
} builder;

static void offset_to_mark(const char *text, size_t len, size_t offset, int *line, int *col)
{
    int l = 1, c = 1;
    for (size_t i = 0; i < offset && i < len; i++) {
        if (text[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static gf_err parser_error(builder *b, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR) {
        gf__cfg_error_set(b->err, b->file, 0, 0, NULL, "out of memory while reading YAML");
        return GF_ERR_NOMEM;
    }
    const char *problem = p->problem ? p->problem : "unknown YAML error";
    int line = (int)p->problem_mark.line + 1;
    int col = (int)p->problem_mark.column + 1;
    if (p->error == YAML_READER_ERROR) {
        offset_to_mark(b->text, b->len, p->problem_offset, &line, &col);
        gf__cfg_error_set(b->err, b->file, line, col, NULL, "invalid YAML: %s (byte offset %zu)",
                          problem, p->problem_offset);
    } else if (p->context) {
        gf__cfg_error_set(b->err, b->file, line, col, NULL, "invalid YAML: %s (%s at %d:%d)",
                          problem, p->context, (int)p->context_mark.line + 1,
                          (int)p->context_mark.column + 1);
    } else {
        gf__cfg_error_set(b->err, b->file, line, col, NULL, "invalid YAML: %s", problem);
    }
    return GF_ERR_CONFIG;
}

static gf_err refuse(builder *b, const yaml_event_t *ev, const char *what)
{
    gf__cfg_error_set(b->err, b->file, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
                      NULL, "%s", what);
    return GF_ERR_CONFIG;
}

static const char *const no_anchor = "anchors (&name) and aliases (*name) are not supported: "
                                     "write the value out";
static const char *const no_tag = "explicit tags (!tag) are not supported: each key has a "
                                  "fixed type";

/* Links a new node under the innermost open collection (or as the root). */
static gf_err add_node(builder *b, const yaml_event_t *ev, cfg_node_kind kind, cfg_node **out)
{
    cfg_node *n = gf__cfg_arena_calloc(b->arena, 1, sizeof(*n));
    if (!n) {
        gf__cfg_error_set(b->err, b->file, 0, 0, NULL, "out of memory while reading YAML");
        return GF_ERR_NOMEM;
    }
    n->kind = kind;
    n->line = (int)ev->start_mark.line + 1;
    n->column = (int)ev->start_mark.column + 1;
    if (b->depth == 0) {
        b->root = n;
    } else {
        cfg_node *parent = b->stack[b->depth - 1];
        if (parent->last_child)
            parent->last_child->next = n;
        else
            parent->child = n;
        parent->last_child = n;
        parent->count++;
    }
    *out = n;
    return GF_OK;
}

static gf_err on_event(builder *b, const yaml_event_t *ev, bool *done)
{
    cfg_node *n = NULL;
    gf_err rc = GF_OK;

    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++b->documents > 1)
            return refuse(b, ev,
                          "more than one YAML document ('---'): a config file holds "
                          "exactly one");
        return GF_OK;
    case YAML_ALIAS_EVENT:
        return refuse(b, ev, no_anchor);
    case YAML_SCALAR_EVENT:
        if (ev->data.scalar.anchor)
            return refuse(b, ev, no_anchor);
        if (ev->data.scalar.tag)
            return refuse(b, ev, no_tag);
        if ((rc = add_node(b, ev, CFG_NODE_SCALAR, &n)) != GF_OK)
            return rc;
        n->len = ev->data.scalar.length;
        n->text = gf__cfg_arena_strndup(b->arena, (const char *)ev->data.scalar.value, n->len);
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        if (!n->text) {
            gf__cfg_error_set(b->err, b->file, 0, 0, NULL, "out of memory while reading YAML");
            return GF_ERR_NOMEM;
        }
        return GF_OK;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool seq = ev->type == YAML_SEQUENCE_START_EVENT;
        const yaml_char_t *anchor =
            seq ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor;
        const yaml_char_t *tag = seq ? ev->data.sequence_start.tag : ev->data.mapping_start.tag;
        if (anchor)
            return refuse(b, ev, no_anchor);
        if (tag)
            return refuse(b, ev, no_tag);
        if (b->depth >= CFG_YAML_MAX_DEPTH)
            return refuse(b, ev, "nested too deeply");
        if ((rc = add_node(b, ev, seq ? CFG_NODE_SEQUENCE : CFG_NODE_MAPPING, &n)) != GF_OK)
            return rc;
        b->stack[b->depth++] = n;
        return GF_OK;
    }
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (b->depth > 0)
            b->depth--;
        return GF_OK;
    case YAML_STREAM_END_EVENT:
        *done = true;
        return GF_OK;
    default:
        return GF_OK;
    }
}

gf_err gf__cfg_yaml_parse(const char *file, const char *text, size_t len,
                          struct gf_config_arena *arena, cfg_node **root, gf_config_error *err)
{
    yaml_parser_t parser;
    builder b = {.file = file, .text = text, .len = len, .arena = arena, .err = err};
    gf_err rc = GF_OK;
    bool done = false;

    *root = NULL;
    if (!yaml_parser_initialize(&parser)) {
        gf__cfg_error_set(err, file, 0, 0, NULL, "out of memory while reading YAML");
        return GF_ERR_NOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    while (!done && rc == GF_OK) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parser_error(&b, &parser);
            break;
        }
        rc = on_event(&b, &ev, &done);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    if (rc == GF_OK)
        *root = b.root;
    return rc;
}

bool gf__cfg_node_is_null(const cfg_node *n)
{
    if (!n)
        return true;
    if (n->kind != CFG_NODE_SCALAR || !n->plain)
        return false;
    return n->len == 0 || strcmp(n->text, "~") == 0 || strcmp(n->text, "null") == 0 ||
           strcmp(n->text, "Null") == 0 || strcmp(n->text, "NULL") == 0;
}

const char *gf__cfg_node_kind_name(const cfg_node *n)
{
    if (gf__cfg_node_is_null(n))
        return "null";
    switch (n->kind) {
    case CFG_NODE_MAPPING:
        return "a mapping";
    case CFG_NODE_SEQUENCE:
        return "a list";
    default:
        return "a scalar";
    }
}

const cfg_node *gf__cfg_node_get_key(const cfg_node *map, const char *key)
{
    if (!map || map->kind != CFG_NODE_MAPPING)
        return NULL;
    for (const cfg_node *k = map->child; k && k->next; k = k->next->next) {
        if (k->kind == CFG_NODE_SCALAR && strlen(k->text) == k->len && strcmp(k->text, key) == 0)
            return k;
    }
    return NULL;
}

const cfg_node *gf__cfg_node_get(const cfg_node *map, const char *key)
{
    const cfg_node *k = gf__cfg_node_get_key(map, key);
    return k ? k->next : NULL;
}

const cfg_node *gf__cfg_node_at(const cfg_node *seq, size_t i)
{
    if (!seq || seq->kind != CFG_NODE_SEQUENCE)
        return NULL;
    const cfg_node *n = seq->child;
    while (n && i > 0) {
        n = n->next;
        i--;
    }
    return n;
}
