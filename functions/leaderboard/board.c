/*
 * board.c — the ranking: an order-statistic treap (see board.h for the contract).
 *
 * Design notes.
 *  - Why a treap: rank, select and both updates are O(log n) expected with two short
 *    primitives (split by key, merge), subtree sizes give ranks for free, and the
 *    whole tree is a few arrays of 32-bit indices (about 48 bytes a node) with no
 *    per-node allocation besides the id. A skip list with widths (Redis's zset)
 *    needs about as much code and more memory per entry; a counted B-tree would be
 *    kinder to the cache at ten million players but is several times the code.
 *    Expected depth for 1M players is ~50, so the recursion below stays shallow.
 *  - Priorities come from a per-board xorshift generator with a fixed seed: the
 *    shape is random with respect to scores (which players choose), and tests are
 *    reproducible. No global state.
 *  - Invariants: in-order = rank order (gf_board_key_before); heap order on prio;
 *    size = 1 + size(left) + size(right); the hash holds exactly the tree's nodes.
 *  - Pages are cut by rank with the subtree sizes: one descent to the first rank,
 *    then an in-order walk, O(log n + limit).
 */
#include <stdlib.h>
#include <string.h>

#include "board_internal.h"
#include "gamefn/util.h"

bool gf_board_key_before(gf_board_order order, const gf_board_key *a, const gf_board_key *b)
{
    if (a->score != b->score)
        return order == GF_BOARD_DESCENDING ? a->score > b->score : a->score < b->score;
    if (a->updated != b->updated)
        return a->updated < b->updated;
    size_t m = a->idlen < b->idlen ? a->idlen : b->idlen;
    int c = memcmp(a->id, b->id, m);
    return c != 0 ? c < 0 : a->idlen < b->idlen;
}

gf_board_key gf_board_key_of(const gf_board_node *n)
{
    return (gf_board_key){.score = n->score, .updated = n->updated, .id = n->id, .idlen = n->idlen};
}

size_t gf_board_id_len(const char *id)
{
    return gf_token_len(id, GF_BOARD_ID_MAX);
}

gf_err gf_board_alloc(gf_board_order order, gf_board **out)
{
    *out = NULL;
    if (order != GF_BOARD_DESCENDING && order != GF_BOARD_ASCENDING)
        return GF_ERR_INVALID;
    gf_board *b = calloc(1, sizeof *b);
    if (b == NULL)
        return GF_ERR_NOMEM;
    b->nodes = calloc(1, sizeof *b->nodes); /* the nil node */
    if (b->nodes == NULL) {
        free(b);
        return GF_ERR_NOMEM;
    }
    b->order = order;
    b->cap = 1;
    b->rng = 0x9E3779B97F4A7C15ULL;
    *out = b;
    return GF_OK;
}

void gf_board_free(gf_board *b)
{
    if (b == NULL)
        return;
    for (uint32_t i = 1; i < b->cap; i++)
        free(b->nodes[i].id);
    free(b->nodes);
    gf_board_hash_fini(&b->hash);
    free(b);
}

gf_board_order gf_board_order_get(const gf_board *b)
{
    return b->order;
}

size_t gf_board_size(const gf_board *b)
{
    return b->nodes[b->root].size;
}

/* ---- treap primitives --------------------------------------------------------- */

static void pull(gf_board *b, uint32_t t)
{
    gf_board_node *n = &b->nodes[t];
    n->size = 1 + b->nodes[n->left].size + b->nodes[n->right].size;
}

static bool node_before(const gf_board *b, uint32_t t, const gf_board_key *k)
{
    gf_board_key nk = gf_board_key_of(&b->nodes[t]);
    return gf_board_key_before(b->order, &nk, k);
}

/* Splits t into *l (the nodes before k) and *r (the rest). */
static void split(gf_board *b, uint32_t t, const gf_board_key *k, uint32_t *l, uint32_t *r)
{
    if (t == 0) {
        *l = *r = 0;
    } else if (node_before(b, t, k)) {
        split(b, b->nodes[t].right, k, &b->nodes[t].right, r);
        *l = t;
        pull(b, t);
    } else {
        split(b, b->nodes[t].left, k, l, &b->nodes[t].left);
        *r = t;
        pull(b, t);
    }
}

/* Joins l and r, every node of l before every node of r. */
static uint32_t merge(gf_board *b, uint32_t l, uint32_t r)
{
    if (l == 0 || r == 0)
        return l ? l : r;
    if (b->nodes[l].prio >= b->nodes[r].prio) {
        b->nodes[l].right = merge(b, b->nodes[l].right, r);
        pull(b, l);
        return l;
    }
    b->nodes[r].left = merge(b, l, b->nodes[r].left);
    pull(b, r);
    return r;
}

/* Removes node x (present in t); returns the new subtree root. */
static uint32_t erase(gf_board *b, uint32_t t, uint32_t x, const gf_board_key *k)
{
    if (t == x)
        return merge(b, b->nodes[t].left, b->nodes[t].right);
    if (node_before(b, t, k))
        b->nodes[t].right = erase(b, b->nodes[t].right, x, k);
    else
        b->nodes[t].left = erase(b, b->nodes[t].left, x, k);
    b->nodes[t].size--;
    return t;
}

static void link(gf_board *b, uint32_t x)
{
    gf_board_key k = gf_board_key_of(&b->nodes[x]);
    uint32_t l, r;
    split(b, b->root, &k, &l, &r);
    b->root = merge(b, merge(b, l, x), r);
}

static void unlink_node(gf_board *b, uint32_t x)
{
    gf_board_key k = gf_board_key_of(&b->nodes[x]);
    b->root = erase(b, b->root, x, &k);
}

static uint64_t rank_of(const gf_board *b, uint32_t x)
{
    gf_board_key k = gf_board_key_of(&b->nodes[x]);
    uint64_t rank = 0;
    uint32_t t = b->root;
    while (t != x) {
        if (node_before(b, t, &k)) {
            rank += b->nodes[b->nodes[t].left].size + 1;
            t = b->nodes[t].right;
        } else {
            t = b->nodes[t].left;
        }
    }
    return rank + b->nodes[b->nodes[x].left].size + 1;
}

/* ---- node storage ------------------------------------------------------------- */

static uint32_t next_prio(gf_board *b)
{
    b->rng ^= b->rng << 13;
    b->rng ^= b->rng >> 7;
    b->rng ^= b->rng << 17;
    return (uint32_t)(b->rng >> 32);
}

static gf_err node_alloc(gf_board *b, uint32_t *out)
{
    if (b->free_list == 0) {
        if (b->cap > GF_BOARD_PLAYERS_MAX)
            return GF_ERR_INVALID;
        uint32_t cap =
            b->cap * 2 > GF_BOARD_PLAYERS_MAX + 1 ? GF_BOARD_PLAYERS_MAX + 1 : b->cap * 2;
        gf_board_node *p = realloc(b->nodes, (size_t)cap * sizeof *p);
        if (p == NULL)
            return GF_ERR_NOMEM;
        memset(p + b->cap, 0, (size_t)(cap - b->cap) * sizeof *p);
        for (uint32_t i = cap - 1; i >= b->cap; i--) {
            p[i].left = b->free_list;
            b->free_list = i;
        }
        b->nodes = p;
        b->cap = cap;
    }
    *out = b->free_list;
    b->free_list = b->nodes[*out].left;
    return GF_OK;
}

gf_err gf_board_insert_new(gf_board *b, const char *id, size_t len, int64_t score, int64_t updated)
{
    uint32_t x;
    gf_err err = node_alloc(b, &x);
    if (err != GF_OK)
        return err;
    char *copy = malloc(len + 1);
    gf_board_node *n = &b->nodes[x];
    *n = (gf_board_node){.score = score,
                         .updated = updated,
                         .id = copy,
                         .size = 1,
                         .prio = next_prio(b),
                         .idlen = (uint8_t)len};
    if (copy != NULL) {
        memcpy(copy, id, len);
        copy[len] = '\0';
    }
    err = copy != NULL ? gf_board_hash_insert(b, x) : GF_ERR_NOMEM;
    if (err != GF_OK) {
        free(copy);
        *n = (gf_board_node){.left = b->free_list};
        b->free_list = x;
        return err;
    }
    link(b, x);
    return GF_OK;
}

void gf_board_remove_node(gf_board *b, uint32_t x)
{
    unlink_node(b, x);
    gf_board_hash_remove(b, x);
    free(b->nodes[x].id);
    b->nodes[x] = (gf_board_node){.left = b->free_list};
    b->free_list = x;
}

/* ---- the API ------------------------------------------------------------------ */

gf_err gf_board_upsert(gf_board *b, const char *player_id, int64_t score, int64_t updated_unix_ms)
{
    size_t len = gf_board_id_len(player_id);
    if (len == 0 || score > GF_BOARD_SCORE_MAX || score < -GF_BOARD_SCORE_MAX ||
        updated_unix_ms < 0)
        return GF_ERR_INVALID;
    uint32_t x = gf_board_hash_find(b, player_id, len);
    if (x == 0)
        return gf_board_insert_new(b, player_id, len, score, updated_unix_ms);
    unlink_node(b, x);
    gf_board_node *n = &b->nodes[x];
    n->score = score;
    n->updated = updated_unix_ms;
    n->left = n->right = 0;
    n->size = 1;
    link(b, x);
    return GF_OK;
}

gf_err gf_board_remove(gf_board *b, const char *player_id)
{
    size_t len = gf_board_id_len(player_id);
    uint32_t x = len ? gf_board_hash_find(b, player_id, len) : 0;
    if (x == 0)
        return len ? GF_ERR_NOT_FOUND : GF_ERR_INVALID;
    gf_board_remove_node(b, x);
    return GF_OK;
}

static void fill_entry(const gf_board *b, uint32_t x, uint64_t rank, gf_board_entry *e)
{
    const gf_board_node *n = &b->nodes[x];
    e->rank = rank;
    e->score = n->score;
    e->updated_unix_ms = n->updated;
    memcpy(e->player_id, n->id, (size_t)n->idlen + 1);
}

gf_err gf_board_get(const gf_board *b, const char *player_id, gf_board_entry *out)
{
    size_t len = gf_board_id_len(player_id);
    uint32_t x = len ? gf_board_hash_find(b, player_id, len) : 0;
    if (x == 0)
        return len ? GF_ERR_NOT_FOUND : GF_ERR_INVALID;
    fill_entry(b, x, rank_of(b, x), out);
    return GF_OK;
}

gf_err gf_board_rank(const gf_board *b, const char *player_id, uint64_t *rank)
{
    gf_board_entry e;
    gf_err err = gf_board_get(b, player_id, &e);
    *rank = err == GF_OK ? e.rank : 0;
    return err;
}

typedef struct walk {
    uint64_t skip; /* nodes still to pass before the first one written */
    size_t limit, n;
    uint64_t rank; /* of the next node written */
    gf_board_entry *out;
} walk;

/* In-order from rank skip + 1, skipping whole subtrees by size. */
static void walk_range(const gf_board *b, uint32_t t, walk *w)
{
    if (t == 0 || w->n == w->limit)
        return;
    const gf_board_node *n = &b->nodes[t];
    uint64_t ls = b->nodes[n->left].size;
    if (w->skip >= ls + 1) {
        w->skip -= ls + 1;
        walk_range(b, n->right, w);
        return;
    }
    walk_range(b, n->left, w);
    if (w->n == w->limit)
        return;
    if (w->skip > 0)
        w->skip--;
    else
        fill_entry(b, t, w->rank++, &w->out[w->n++]);
    walk_range(b, n->right, w);
}

size_t gf_board_range(const gf_board *b, uint64_t first, size_t limit, gf_board_entry *out)
{
    if (first == 0 || first > gf_board_size(b) || limit == 0)
        return 0;
    walk w = {.skip = first - 1, .limit = limit, .rank = first, .out = out};
    walk_range(b, b->root, &w);
    return w.n;
}

size_t gf_board_top(const gf_board *b, size_t limit, gf_board_entry *out)
{
    return gf_board_range(b, 1, limit, out);
}

size_t gf_board_page(const gf_board *b, uint64_t start_rank, size_t limit, gf_board_entry *out)
{
    return gf_board_range(b, start_rank, limit, out);
}

gf_err gf_board_around(const gf_board *b, const char *player_id, size_t before, size_t after,
                       gf_board_entry *out, size_t *n)
{
    uint64_t rank = 0;
    *n = 0;
    gf_err err = gf_board_rank(b, player_id, &rank);
    if (err != GF_OK)
        return err;
    uint64_t first = rank > before ? rank - before : 1;
    *n = gf_board_range(b, first, (size_t)(rank - first) + 1 + after, out);
    return GF_OK;
}
