/*
 * snapshot.c — leaderboard snapshots in stream LB_SNAPSHOTS, so a starting replica
 * replays only what came after one instead of every key of the bucket.
 *
 * Format: every board and period as BoardSnapshotChunk messages on
 * gamefn.v1.lb.snapshot.chunk (headers Gamefn-Board, Gamefn-Period; rank order), then a
 * LeaderboardSnapshot manifest on gamefn.v1.lb.snapshot.manifest listing each part's
 * chunk sequences and the KV_leaderboard sequence the boards were exactly at
 * (as_of_stream_seq). A snapshot exists once its manifest is stored; a reader takes the
 * last manifest and fetches its chunks by sequence.
 *
 * Design notes:
 * - Who writes: the holder of a tick lease (main.c's "snapshot" tick endpoint) asks
 *   every few seconds; one is written when the last manifest is older than
 *   snapshot_interval and the boards moved since its as_of. The boards are encoded
 *   under the read lock (consistent with applied_seq), published after it is released.
 * - Retention: after a manifest, chunks older than the previous snapshot's are purged
 *   and two manifests kept, so a replica still loading the previous snapshot finishes; a
 *   reader that loses a chunk anyway (a purge raced it) falls back to a full replay.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/util.h"
#include "lb_fn.h"

/* The last manifest, or NULL (none, or unreadable: logged). */
static Gamefn__V1__LeaderboardSnapshot *last_manifest(lb_fn *lb)
{
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetLastMsg(&m, lb->js, LB_SNAPSHOTS, LB_MANIFEST_SUBJECT, NULL, &jerr);
    if (s != NATS_OK) {
        if (s != NATS_NOT_FOUND && jerr != JSNoMessageFoundErr)
            gf_log_warn("cannot read the last leaderboard snapshot", "status=%d js_code=%d", (int)s,
                        (int)jerr);
        return NULL;
    }
    Gamefn__V1__LeaderboardSnapshot *snap = gamefn__v1__leaderboard_snapshot__unpack(
        NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
    natsMsg_Destroy(m);
    if (!snap || snap->version != 1) {
        gf_log_warn("leaderboard snapshot manifest unreadable: ignored", "version=%u",
                    snap ? snap->version : 0);
        if (snap)
            gamefn__v1__leaderboard_snapshot__free_unpacked(snap, NULL);
        return NULL;
    }
    return snap;
}

/* ---- loading -------------------------------------------------------------------------- */

static gf_err load_part(lb_fn *lb, const Gamefn__V1__SnapshotPart *part)
{
    for (size_t c = 0; c < part->n_chunk_seqs; c++) {
        natsMsg *m = NULL;
        jsErrCode jerr = 0;
        if (js_GetMsg(&m, lb->js, LB_SNAPSHOTS, part->chunk_seqs[c], NULL, &jerr) != NATS_OK)
            return GF_ERR_NOT_FOUND;
        gf_err err = lb_boards_load_chunk(lb->boards, part->board, part->period,
                                          (const uint8_t *)natsMsg_GetData(m),
                                          (size_t)natsMsg_GetDataLength(m));
        natsMsg_Destroy(m);
        if (err == GF_ERR_NOT_FOUND)
            return GF_OK; /* a board or period no longer configured */
        if (err != GF_OK)
            return err;
    }
    const gf_board *b = lb_boards_get(lb->boards, part->board, part->period);
    return !b || gf_board_size(b) == part->players ? GF_OK : GF_ERR_INVALID;
}

void lb_snapshot_load(lb_fn *lb)
{
    int64_t t0 = gf_clock_mono_ms();
    Gamefn__V1__LeaderboardSnapshot *snap = last_manifest(lb);
    if (!snap) {
        gf_log_info("no leaderboard snapshot: replaying KV_leaderboard from the start", "");
        return;
    }
    gf_err err = GF_OK;
    for (size_t i = 0; err == GF_OK && i < snap->n_parts; i++)
        err = load_part(lb, snap->parts[i]);
    if (err == GF_OK) {
        lb->applied_seq = snap->as_of_stream_seq;
        atomic_store(&lb->as_of_seq, lb->applied_seq);
        gf_log_info("leaderboard snapshot loaded",
                    "as_of_stream_seq=%" PRIu64 " players=%zu parts=%zu writer=%s ms=%lld",
                    snap->as_of_stream_seq, lb_boards_players(lb->boards), snap->n_parts,
                    snap->writer, (long long)(gf_clock_mono_ms() - t0));
    } else { /* start over from nothing: a full replay is always right */
        gf_log_warn("leaderboard snapshot incomplete: replaying KV_leaderboard from the start",
                    "as_of_stream_seq=%" PRIu64 " err=%s", snap->as_of_stream_seq, gf_err_str(err));
        lb_boards *fresh = NULL;
        if (lb_boards_alloc(lb->cfg, &fresh) == GF_OK) {
            lb_boards_free(lb->boards);
            lb->boards = fresh;
        }
        lb->applied_seq = 0;
    }
    gamefn__v1__leaderboard_snapshot__free_unpacked(snap, NULL);
}

/* ---- writing -------------------------------------------------------------------------- */

static gf_err publish_chunk(lb_fn *lb, const lb_chunk *c, uint64_t *seq)
{
    natsMsg *m = NULL;
    jsPubAck *ack = NULL;
    natsStatus s = natsMsg_Create(&m, LB_CHUNK_SUBJECT, NULL, (const char *)c->data, (int)c->len);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Gamefn-Board", c->board);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Gamefn-Period", c->period);
    if (s == NATS_OK)
        s = js_PublishMsg(&ack, lb->js, m, NULL, NULL);
    if (s == NATS_OK)
        *seq = ack->Sequence;
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(m);
    return s == NATS_OK ? GF_OK : GF_ERR_UNAVAILABLE;
}

/* The manifest of chunks[0..n) (parts in chunk order), packed. */
static gf_err manifest(lb_fn *lb, const lb_chunk *chunks, const uint64_t *seqs, size_t n,
                       uint64_t as_of, uint8_t **out, size_t *len)
{
    Gamefn__V1__SnapshotPart *parts = calloc(n ? n : 1, sizeof *parts);
    Gamefn__V1__SnapshotPart **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    size_t np = 0;
    gf_err err = parts && ptrs ? GF_OK : GF_ERR_NOMEM;
    for (size_t i = 0; err == GF_OK && i < n; i++) {
        Gamefn__V1__SnapshotPart *p = np ? &parts[np - 1] : NULL;
        if (!p || strcmp(p->board, chunks[i].board) != 0 ||
            strcmp(p->period, chunks[i].period) != 0) {
            p = &parts[np];
            ptrs[np++] = p;
            gamefn__v1__snapshot_part__init(p);
            p->board = (char *)(uintptr_t)chunks[i].board;
            p->period = (char *)(uintptr_t)chunks[i].period;
            p->players = chunks[i].players;
            p->chunk_seqs = (uint64_t *)(uintptr_t)&seqs[i];
        }
        if (chunks[i].players > 0)
            p->n_chunk_seqs++;
    }
    Gamefn__V1__LeaderboardSnapshot snap = GAMEFN__V1__LEADERBOARD_SNAPSHOT__INIT;
    char writer[128];
    snprintf(writer, sizeof writer, "%s", lb->instance ? lb->instance : "");
    snap.version = 1;
    snap.as_of_stream_seq = as_of;
    snap.written_unix_ms = gf_clock_unix_ms();
    snap.writer = writer;
    snap.n_parts = np;
    snap.parts = ptrs;
    if (err == GF_OK)
        err = gf_pack(&snap.base, out, len);
    free(parts);
    free(ptrs);
    return err;
}

/* Keeps the previous snapshot's chunks and the last two manifests. */
static void purge_old(lb_fn *lb, const Gamefn__V1__LeaderboardSnapshot *previous)
{
    uint64_t first = 0;
    for (size_t i = 0; previous && i < previous->n_parts; i++) {
        for (size_t c = 0; c < previous->parts[i]->n_chunk_seqs; c++) {
            uint64_t s = previous->parts[i]->chunk_seqs[c];
            first = first == 0 || s < first ? s : first;
        }
    }
    jsOptions o;
    jsOptions_Init(&o);
    if (first > 0) {
        o.Stream.Purge.Subject = LB_CHUNK_SUBJECT;
        o.Stream.Purge.Sequence = first;
        js_PurgeStream(lb->js, LB_SNAPSHOTS, &o, NULL);
    }
    jsOptions_Init(&o);
    o.Stream.Purge.Subject = LB_MANIFEST_SUBJECT;
    o.Stream.Purge.Keep = 2;
    js_PurgeStream(lb->js, LB_SNAPSHOTS, &o, NULL);
}

gf_err lb_snapshot_maybe_write(lb_fn *lb)
{
    Gamefn__V1__LeaderboardSnapshot *previous = last_manifest(lb);
    int64_t now = gf_clock_unix_ms();
    uint64_t as_of = atomic_load(&lb->as_of_seq);
    gf_err err = GF_OK;
    if (previous && (now - previous->written_unix_ms < lb->cfg->snapshot_interval_ms ||
                     previous->as_of_stream_seq >= as_of))
        goto out; /* recent enough, or nothing new */
    if (as_of == 0)
        goto out;
    int64_t t0 = gf_clock_mono_ms();
    lb_chunk *chunks = NULL;
    size_t n = 0;
    pthread_rwlock_rdlock(&lb->lock);
    as_of = lb->applied_seq;
    size_t players = lb_boards_players(lb->boards);
    err = lb_boards_snapshot(lb->boards, (size_t)lb->cfg->snapshot_chunk, &chunks, &n);
    pthread_rwlock_unlock(&lb->lock);
    uint64_t *seqs = err == GF_OK ? calloc(n ? n : 1, sizeof *seqs) : NULL;
    if (err == GF_OK && !seqs)
        err = GF_ERR_NOMEM;
    for (size_t i = 0; err == GF_OK && i < n; i++) {
        if (chunks[i].players > 0) /* an empty board is a part without chunks */
            err = publish_chunk(lb, &chunks[i], &seqs[i]);
    }
    uint8_t *man = NULL;
    size_t mlen = 0;
    if (err == GF_OK)
        err = manifest(lb, chunks, seqs, n, as_of, &man, &mlen);
    if (err == GF_OK) {
        jsPubAck *ack = NULL;
        err = js_Publish(&ack, lb->js, LB_MANIFEST_SUBJECT, man, (int)mlen, NULL, NULL) == NATS_OK
                  ? GF_OK
                  : GF_ERR_UNAVAILABLE;
        jsPubAck_Destroy(ack);
    }
    if (err == GF_OK) {
        purge_old(lb, previous);
        gf_log_info("leaderboard snapshot written",
                    "as_of_stream_seq=%" PRIu64 " players=%zu chunks=%zu ms=%lld", as_of, players,
                    n, (long long)(gf_clock_mono_ms() - t0));
    } else {
        gf_log_warn("leaderboard snapshot not written", "err=%s", gf_err_str(err));
    }
    free(man);
    free(seqs);
    lb_chunks_free(chunks, n);
out:
    if (previous)
        gamefn__v1__leaderboard_snapshot__free_unpacked(previous, NULL);
    return err;
}
