/*
 * board_internal.h — the board's nodes and its id index, shared by board.c,
 * board_hash.c and board_snapshot.c. Private to gamefn_board.
 */
#ifndef GAMEFN_BOARD_INTERNAL_H
#define GAMEFN_BOARD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "board.h"

/* A treap node. Index 0 is the nil node (size 0); free nodes chain through left. */
typedef struct gf_board_node {
    int64_t score;
    int64_t updated;
    char *id; /* malloc'd, NUL-terminated token */
    uint32_t left, right;
    uint32_t size; /* nodes in this subtree */
    uint32_t prio; /* heap order: a parent's prio >= its children's */
    uint8_t idlen;
} gf_board_node;

/* player id -> node index: open addressing, linear probing, 0 = empty slot. */
typedef struct gf_board_hash {
    uint32_t *slots;
    uint32_t mask; /* capacity - 1, capacity a power of two */
    uint32_t used;
} gf_board_hash;

struct gf_board {
    gf_board_order order;
    gf_board_node *nodes;
    uint32_t cap;       /* nodes allocated, nil included */
    uint32_t root;      /* 0 = empty */
    uint32_t free_list; /* 0 = none */
    uint64_t rng;       /* treap priorities */
    gf_board_hash hash;
};

/* The sort key of a node, or of a node being looked for. */
typedef struct gf_board_key {
    int64_t score;
    int64_t updated;
    const char *id;
    uint8_t idlen;
} gf_board_key;

/* true when a ranks before b. */
bool gf_board_key_before(gf_board_order order, const gf_board_key *a, const gf_board_key *b);
gf_board_key gf_board_key_of(const gf_board_node *n);

/* Length of a player id token (1..64 of [A-Za-z0-9_-]), 0 if not one. */
size_t gf_board_id_len(const char *id);

/* The node of id, or 0. */
uint32_t gf_board_hash_find(const gf_board *b, const char *id, size_t len);
gf_err gf_board_hash_insert(gf_board *b, uint32_t node);
void gf_board_hash_remove(gf_board *b, uint32_t node);
void gf_board_hash_fini(gf_board_hash *h);

/* Adds an entry known to be absent, or removes one known to be present. */
gf_err gf_board_insert_new(gf_board *b, const char *id, size_t len, int64_t score, int64_t updated);
void gf_board_remove_node(gf_board *b, uint32_t node);

/* Copies the entries of ranks [first, first + limit) into out; returns how many. */
size_t gf_board_range(const gf_board *b, uint64_t first, size_t limit, gf_board_entry *out);

#endif
