/*
 * board_snapshot.c — a board to BoardSnapshotChunk messages and back (board.h).
 *
 * Design notes: a chunk is columnar (ids, scores, times as parallel repeated
 * fields), so protobuf packs the numbers as varints without a sub-message per
 * player. Loading trusts nothing: every id, bound and the strict rank order
 * (which also proves the entries can be appended at the end of the board) is
 * checked before the first insert, and a duplicate player found while inserting
 * rolls the chunk back, so a bad chunk leaves the board as it was.
 */
#include <stdlib.h>

#include "board_internal.h"
#include "gamefn/util.h"
#include "gamefn/v1/state.pb-c.h"

enum { SNAPSHOT_VERSION = 1 };

gf_err gf_board_snapshot_encode(const gf_board *b, uint64_t first_rank, size_t limit, uint8_t **out,
                                size_t *len)
{
    *out = NULL;
    *len = 0;
    uint64_t size = gf_board_size(b);
    if (first_rank == 0 || first_rank > size + 1 || limit == 0 || limit > GF_BOARD_CHUNK_MAX)
        return GF_ERR_INVALID;
    if (limit > size - first_rank + 1)
        limit = (size_t)(size - first_rank + 1);
    gf_board_entry *e = malloc((limit ? limit : 1) * sizeof *e);
    char **ids = malloc((limit ? limit : 1) * sizeof *ids);
    int64_t *scores = malloc((limit ? limit : 1) * sizeof *scores);
    int64_t *times = malloc((limit ? limit : 1) * sizeof *times);
    gf_err err = e && ids && scores && times ? GF_OK : GF_ERR_NOMEM;
    size_t n = err == GF_OK ? gf_board_range(b, first_rank, limit, e) : 0;
    for (size_t i = 0; i < n; i++) {
        ids[i] = e[i].player_id;
        scores[i] = e[i].score;
        times[i] = e[i].updated_unix_ms;
    }
    Gamefn__V1__BoardSnapshotChunk m = GAMEFN__V1__BOARD_SNAPSHOT_CHUNK__INIT;
    m.version = SNAPSHOT_VERSION;
    m.order = (Gamefn__V1__BoardOrder)b->order;
    m.total_players = size;
    m.first_rank = first_rank;
    m.n_player_id = m.n_score = m.n_updated_unix_ms = n;
    m.player_id = ids;
    m.score = scores;
    m.updated_unix_ms = times;
    if (err == GF_OK)
        err = gf_pack(&m.base, out, len);
    free(times);
    free(scores);
    free(ids);
    free(e);
    return err;
}

static bool header_valid(const gf_board *b, const Gamefn__V1__BoardSnapshotChunk *m)
{
    size_t n = m->n_player_id;
    uint64_t size = gf_board_size(b);
    return m->version == SNAPSHOT_VERSION && (int)m->order == (int)b->order &&
           m->first_rank == size + 1 && n == m->n_score && n == m->n_updated_unix_ms &&
           n <= GF_BOARD_CHUNK_MAX && m->total_players <= GF_BOARD_PLAYERS_MAX &&
           m->total_players >= size + n;
}

static gf_board_key entry_key(const Gamefn__V1__BoardSnapshotChunk *m, size_t i, size_t len)
{
    return (gf_board_key){.score = m->score[i],
                          .updated = m->updated_unix_ms[i],
                          .id = m->player_id[i],
                          .idlen = (uint8_t)len};
}

/* Each entry well formed and strictly after the one before (the board's last first). */
static bool entries_valid(const gf_board *b, const Gamefn__V1__BoardSnapshotChunk *m)
{
    gf_board_key prev = {0};
    bool has_prev = false;
    gf_board_entry last;
    if (gf_board_range(b, gf_board_size(b), 1, &last) == 1) {
        prev = (gf_board_key){.score = last.score,
                              .updated = last.updated_unix_ms,
                              .id = last.player_id,
                              .idlen = (uint8_t)gf_board_id_len(last.player_id)};
        has_prev = true;
    }
    for (size_t i = 0; i < m->n_player_id; i++) {
        size_t len = gf_board_id_len(m->player_id[i]);
        gf_board_key k = entry_key(m, i, len);
        if (len == 0 || k.score > GF_BOARD_SCORE_MAX || k.score < -GF_BOARD_SCORE_MAX ||
            k.updated < 0 || (has_prev && !gf_board_key_before(b->order, &prev, &k)))
            return false;
        prev = k;
        has_prev = true;
    }
    return true;
}

/* Inserts the entries; on a duplicate player or an error removes what it added. */
static gf_err insert_all(gf_board *b, const Gamefn__V1__BoardSnapshotChunk *m)
{
    size_t i = 0;
    gf_err err = GF_OK;
    for (; i < m->n_player_id; i++) {
        const char *id = m->player_id[i];
        size_t len = gf_board_id_len(id);
        err = gf_board_hash_find(b, id, len) != 0 ? GF_ERR_INVALID : GF_OK;
        if (err == GF_OK)
            err = gf_board_insert_new(b, id, len, m->score[i], m->updated_unix_ms[i]);
        if (err != GF_OK)
            break;
    }
    while (err != GF_OK && i-- > 0) {
        const char *id = m->player_id[i];
        gf_board_remove_node(b, gf_board_hash_find(b, id, gf_board_id_len(id)));
    }
    return err;
}

gf_err gf_board_snapshot_load(gf_board *b, const uint8_t *buf, size_t len, uint64_t *total_players)
{
    *total_players = 0;
    Gamefn__V1__BoardSnapshotChunk *m = gamefn__v1__board_snapshot_chunk__unpack(NULL, len, buf);
    if (m == NULL)
        return GF_ERR_INVALID;
    gf_err err = header_valid(b, m) && entries_valid(b, m) ? GF_OK : GF_ERR_INVALID;
    if (err == GF_OK)
        err = insert_all(b, m);
    if (err == GF_OK)
        *total_players = m->total_players;
    gamefn__v1__board_snapshot_chunk__free_unpacked(m, NULL);
    return err;
}
