/*
 * history_cmd.c — `gamefn history <player>`: the player's events in stream order (which
 * is the player's order: one partition, one subject per player and type).
 *
 * The partition comes from the player id (gamefn/partition.h, as the server's mapping
 * computes it), so only gamefn.v1.evp.<p>.<player>.> is read: an ordered consumer with
 * that filter (no other player's event crosses the wire, not even one of the same
 * partition), started at --since or at the beginning. A subject-filtered stream info
 * first says how many events the player has (0: done at once). The newest --limit
 * events are printed, oldest first.
 */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "event_text.h"
#include "gamefn/conn.h"
#include "gamefn/limits.h"
#include "gamefn/names.h"
#include "gamefn/partition.h"

const char gf_cli_history_help[] =
    "usage: gamefn history <player_id> [--limit N] [--since T] [--json] [--stream S]\n\n"
    "Prints the player's events from the event stream in order, oldest first, one\n"
    "line each (stored time, stream sequence, type, source#seq, payload).\n\n"
    "  --limit N    the newest N events (default 100, at most 1000000)\n"
    "  --since T    only events stored since T: an RFC 3339 time\n"
    "               (2026-11-29T15:00:00Z) or a duration ago (90s, 15m, 2h, 7d)\n"
    "  --json       one JSON object: {player_id, partition, stream, total, events}\n"
    "  --stream S   the event stream (default EVENTS)\n\n"
    "exit: 0 shown (no events is not an error), 2 usage, 3 NATS unreachable, 4 no such\n"
    "      stream, 5 the JetStream API did not answer, 7 refused (permissions), 8 the\n"
    "      read broke off\n";

typedef struct kept {
    natsMsg **ring;
    size_t cap, len, head; /* the newest `cap` messages, head = oldest */
} kept;

static void keep(kept *k, natsMsg *m)
{
    if (k->len < k->cap) {
        k->ring[(k->head + k->len++) % k->cap] = m;
    } else {
        natsMsg_Destroy(k->ring[k->head]);
        k->ring[k->head] = m;
        k->head = (k->head + 1) % k->cap;
    }
}

static void stored_of(natsMsg *m, gf_cli_stored *at)
{
    jsMsgMetaData *md = NULL;
    at->subject = natsMsg_GetSubject(m);
    at->stream_seq = 0;
    at->stored_unix_ms = 0;
    if (natsMsg_GetMetaData(&md, m) == NATS_OK) {
        at->stream_seq = md->Sequence.Stream;
        at->stored_unix_ms = md->Timestamp / 1000000;
        jsMsgMetaData_Destroy(md);
    }
}

/* Reads the player's events into k; *read = how many were read. An exit code. */
static int read_events(jsCtx *js, const char *stream, const char *filter, int64_t since_ms, kept *k,
                       uint64_t *read)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Ordered = true;
    if (since_ms > 0) {
        so.Config.DeliverPolicy = js_DeliverByStartTime;
        so.Config.OptStartTime = since_ms * 1000000;
    }
    natsSubscription *sub = NULL;
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    *read = 0;
    natsStatus s = js_SubscribeSync(&sub, js, filter, NULL, &so, &jerr);
    if (s == NATS_OK)
        s = natsSubscription_GetConsumerInfo(&ci, sub, NULL, &jerr);
    if (s != NATS_OK) {
        char what[300];
        snprintf(what, sizeof what, "reading stream %s", stream);
        natsSubscription_Destroy(sub);
        return gf_cli_js_error("history", what, s, jerr);
    }
    uint64_t total = ci->NumPending + ci->Delivered.Consumer;
    jsConsumerInfo_Destroy(ci);
    int code = GF_CLI_OK;
    while (*read < total) {
        natsMsg *m = NULL;
        s = natsSubscription_NextMsg(&m, sub, 5000);
        if (s != NATS_OK) {
            fprintf(stderr, "gamefn history: stopped after %" PRIu64 " of %" PRIu64 " events: %s\n",
                    *read, total, natsStatus_GetText(s));
            code = s == NATS_TIMEOUT ? GF_CLI_TIMEOUT : GF_CLI_FAILED;
            break;
        }
        jsMsgMetaData *md = NULL;
        bool last = natsMsg_GetMetaData(&md, m) == NATS_OK && md->NumPending == 0;
        jsMsgMetaData_Destroy(md);
        keep(k, m);
        (*read)++;
        if (last)
            break;
    }
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    return code;
}

static int print(const kept *k, const char *player, unsigned partition, const char *stream,
                 uint64_t read, bool json)
{
    if (!json) {
        if (read == 0)
            printf("no events for player %s (partition %u of %s)\n", player, partition, stream);
        else if (read > k->len)
            printf("(%" PRIu64 " earlier events not shown: --limit)\n", read - k->len);
        for (size_t i = 0; i < k->len; i++) {
            natsMsg *m = k->ring[(k->head + i) % k->cap];
            gf_cli_stored at;
            stored_of(m, &at);
            gf_cli_event_line(stdout, &at, (const uint8_t *)natsMsg_GetData(m),
                              (size_t)natsMsg_GetDataLength(m));
        }
        return GF_CLI_OK;
    }
    json_t *events = json_array();
    for (size_t i = 0; events && i < k->len; i++) {
        natsMsg *m = k->ring[(k->head + i) % k->cap];
        gf_cli_stored at;
        stored_of(m, &at);
        if (json_array_append_new(events,
                                  gf_cli_event_json(&at, (const uint8_t *)natsMsg_GetData(m),
                                                    (size_t)natsMsg_GetDataLength(m))) != 0) {
            json_decref(events);
            events = NULL;
        }
    }
    json_t *o = events ? json_pack("{s:s, s:i, s:s, s:I, s:o}", "player_id", player, "partition",
                                   (int)partition, "stream", stream, "total", (json_int_t)read,
                                   "events", events)
                       : NULL;
    if (!o) {
        fprintf(stderr, "gamefn history: out of memory\n");
        return GF_CLI_FAILED;
    }
    gf_cli_json_print(o, true);
    return GF_CLI_OK;
}

int gf_cli_history(gf_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"limit", required_argument, NULL, 'n'},
        {"since", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"stream", required_argument, NULL, 'S'},
        {NULL, 0, NULL, 0},
    };
    long long limit = 100;
    int64_t since_ms = 0;
    bool json = false;
    const char *stream = "EVENTS";
    char why[GF_NAME_WHY_MAX];
    int c;
    optind = 0; /* a fresh scan: argv is the command's */
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (!gf_cli_integer("history", "--limit", optarg, 1, 1000000, &limit))
                return GF_CLI_USAGE;
            break;
        case 's':
            if (!gf_cli_since("history", "--since", optarg, &since_ms))
                return GF_CLI_USAGE;
            break;
        case 'S':
            if (!gf_name_asset_ok(optarg, why, sizeof why))
                return gf_cli_usage_error("history", "--stream: stream name %s", why);
            stream = optarg;
            break;
        case 'j':
            json = true;
            break;
        default:
            return gf_cli_usage_error("history", "unknown option");
        }
    }
    if (optind != argc - 1)
        return gf_cli_usage_error("history",
                                  optind >= argc ? "which player?" : "one player id only");
    const char *player = argv[optind];
    if (!gf_name_id_ok(player, GF_WIRE_ID_MAX, why, sizeof why))
        return gf_cli_usage_error("history", "player id %s", why);
    unsigned partition = gf_partition_of(player, GF_WIRE_EVENT_PARTITIONS);
    char filter[160];
    snprintf(filter, sizeof filter, "gamefn.v1.evp.%u.%s.>", partition, player);

    kept k = {.cap = (size_t)limit};
    k.ring = calloc(k.cap, sizeof *k.ring);
    if (!k.ring) {
        fprintf(stderr, "gamefn history: out of memory\n");
        return GF_CLI_FAILED;
    }
    gf_conn *conn = NULL;
    uint64_t read = 0;
    int code = gf_cli_connect(cli, "history", &conn);
    if (code != GF_CLI_OK)
        goto out;
    /* How many the player has at all: nothing to subscribe for when none. */
    jsOptions o;
    jsOptions_Init(&o);
    o.Stream.Info.SubjectsFilter = filter;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, gf_conn_js(conn), stream, &o, &jerr);
    if (s != NATS_OK) {
        char what[300];
        snprintf(what, sizeof what, "stream %s", stream);
        code = gf_cli_js_error("history", what, s, jerr);
        goto out;
    }
    bool any = si->State.Subjects && si->State.Subjects->Count > 0;
    jsStreamInfo_Destroy(si);
    code = any ? read_events(gf_conn_js(conn), stream, filter, since_ms, &k, &read) : GF_CLI_OK;
    if (code == GF_CLI_OK)
        code = print(&k, player, partition, stream, read, json);
out:
    for (size_t i = 0; i < k.len; i++)
        natsMsg_Destroy(k.ring[(k.head + i) % k.cap]);
    free(k.ring);
    gf_conn_close(conn, 1000);
    return code;
}
