/*
 * config_yaml.h — private: one YAML document -> a tree of cfg_node with 1-based
 * line:column marks, built from libyaml's event API.
 *
 * The subset accepted is plain configuration: mappings, sequences and scalars, one
 * document per file. Anchors/aliases and explicit tags are refused with a clear error
 * (a table decides each value's type; aliases would let one value appear under two
 * keys and hide where an error is). Nesting deeper than CFG_YAML_MAX_DEPTH is refused
 * so that hostile input cannot exhaust the stack of the walker.
 *
 * Ownership: every node and scalar text lives in the arena passed in.
 */
#ifndef GAMEFN_CONFIG_YAML_H
#define GAMEFN_CONFIG_YAML_H

#include <stdbool.h>
#include <stddef.h>

#include "gamefn/config.h"

enum { CFG_YAML_MAX_DEPTH = 64 };

typedef enum cfg_node_kind {
    CFG_NODE_SCALAR,
    CFG_NODE_MAPPING,
    CFG_NODE_SEQUENCE,
} cfg_node_kind;

typedef struct cfg_node {
    cfg_node_kind kind;
    int line, column; /* 1-based start of the node */
    const char *text; /* scalar: NUL-terminated copy (may hold inner NULs: see len) */
    size_t len;       /* scalar: bytes in text */
    bool plain;       /* scalar: unquoted (only a plain scalar can be null) */
    struct cfg_node *child, *last_child; /* mapping: key, value, key, value, ... */
    struct cfg_node *next;               /* next sibling */
    size_t count;                        /* children (a mapping has 2 per pair) */
} cfg_node;

/* Parses `len` bytes of `text`. *root is NULL when the input holds no document at all
 * (empty, or only comments). More than one document is an error. `file` names the
 * input in error messages. Returns GF_OK, GF_ERR_CONFIG or GF_ERR_NOMEM. */
gf_err gf__cfg_yaml_parse(const char *file, const char *text, size_t len,
                          struct gf_config_arena *arena, cfg_node **root, gf_config_error *err);

/* NULL, or a plain scalar "", "~", "null", "Null", "NULL". */
bool gf__cfg_node_is_null(const cfg_node *n);

/* "a mapping", "a list", "a scalar", "null". */
const char *gf__cfg_node_kind_name(const cfg_node *n);

/* Value of `key` in a mapping (first match), or NULL. */
const cfg_node *gf__cfg_node_get(const cfg_node *map, const char *key);
/* Key node of `key` in a mapping, or NULL. */
const cfg_node *gf__cfg_node_get_key(const cfg_node *map, const char *key);
/* Item i of a sequence, or NULL. */
const cfg_node *gf__cfg_node_at(const cfg_node *seq, size_t i);

#endif
