/*
 * board_hash.c — player id -> node index for a board.
 *
 * Design notes: open addressing with linear probing over 32-bit node indices (0 =
 * empty), at most half full, so a lookup touches one or two cache lines and costs 8
 * bytes a player at worst. Removal shifts the following run back instead of leaving
 * tombstones, so probe lengths never degrade under churn. The id bytes live in the
 * node; a slot compares them there.
 */
#include <stdlib.h>
#include <string.h>

#include "board_internal.h"

static uint32_t hash_id(const char *id, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)id[i]) * 0x100000001b3ULL;
    return (uint32_t)(h ^ (h >> 32));
}

static bool same(const gf_board_node *n, const char *id, size_t len)
{
    return n->idlen == len && memcmp(n->id, id, len) == 0;
}

uint32_t gf_board_hash_find(const gf_board *b, const char *id, size_t len)
{
    const gf_board_hash *h = &b->hash;
    if (h->slots == NULL)
        return 0;
    for (uint32_t i = hash_id(id, len) & h->mask;; i = (i + 1) & h->mask) {
        uint32_t x = h->slots[i];
        if (x == 0 || same(&b->nodes[x], id, len))
            return x;
    }
}

static void place(gf_board *b, uint32_t *slots, uint32_t mask, uint32_t x)
{
    const gf_board_node *n = &b->nodes[x];
    uint32_t i = hash_id(n->id, n->idlen) & mask;
    while (slots[i] != 0)
        i = (i + 1) & mask;
    slots[i] = x;
}

static gf_err grow(gf_board *b)
{
    gf_board_hash *h = &b->hash;
    uint64_t cap = h->slots ? ((uint64_t)h->mask + 1) * 2 : 64;
    if (cap > ((uint64_t)1 << 31))
        return GF_ERR_NOMEM;
    uint32_t *slots = calloc((size_t)cap, sizeof *slots);
    if (slots == NULL)
        return GF_ERR_NOMEM;
    for (uint32_t i = 0; h->slots != NULL && i <= h->mask; i++)
        if (h->slots[i] != 0)
            place(b, slots, (uint32_t)(cap - 1), h->slots[i]);
    free(h->slots);
    h->slots = slots;
    h->mask = (uint32_t)(cap - 1);
    return GF_OK;
}

gf_err gf_board_hash_insert(gf_board *b, uint32_t x)
{
    gf_board_hash *h = &b->hash;
    if (h->slots == NULL || (uint64_t)(h->used + 1) * 2 > (uint64_t)h->mask + 1) {
        gf_err err = grow(b);
        if (err != GF_OK)
            return err;
    }
    place(b, h->slots, h->mask, x);
    h->used++;
    return GF_OK;
}

void gf_board_hash_remove(gf_board *b, uint32_t x)
{
    gf_board_hash *h = &b->hash;
    const gf_board_node *n = &b->nodes[x];
    uint32_t i = hash_id(n->id, n->idlen) & h->mask;
    while (h->slots[i] != x)
        i = (i + 1) & h->mask;
    /* Backward shift: move later members of the run into the hole when their home
     * slot is not between the hole and their current slot. */
    for (uint32_t j = (i + 1) & h->mask; h->slots[j] != 0; j = (j + 1) & h->mask) {
        const gf_board_node *m = &b->nodes[h->slots[j]];
        uint32_t home = hash_id(m->id, m->idlen) & h->mask;
        if (((j - home) & h->mask) >= ((j - i) & h->mask)) {
            h->slots[i] = h->slots[j];
            i = j;
        }
    }
    h->slots[i] = 0;
    h->used--;
}

void gf_board_hash_fini(gf_board_hash *h)
{
    free(h->slots);
    *h = (gf_board_hash){0};
}
