/*
 * dlq_cmd.c — `gamefn dlq ls|show|redrive`: the dead letters in stream DLQ.
 *
 *   gamefn dlq ls [--stream S] [--consumer C] [--limit N] [--json]
 *   gamefn dlq show DLQ_SEQ [--json]
 *   gamefn dlq redrive (DLQ_SEQ... | --all [--stream S] [--consumer C]) [--json]
 *
 * DLQ_SEQ is the letter's sequence in stream DLQ (the first column of `ls`). --consumer
 * takes a durable ("leaderboard-p03") or a partitioned group ("leaderboard": all its
 * durables). A re-drive republishes the original payload and headers to the original
 * subject with a fresh Msg-Id and Gamefn-Redrive / Gamefn-Redrive-Of (functions/dlq/
 * letter.h); the letter stays in DLQ (kept 30 days), so a second re-drive is possible and
 * harmless: the consumer framework applies a re-driven event at most once.
 */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "cli.h"
#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/event_check.h"
#include "letter.h"

enum { SCAN_MAX = 1000000 };

typedef struct dlq_opts {
    const char *stream, *consumer;
    long long limit;
    bool json, all;
} dlq_opts;

const char gf_cli_dlq_help[] =
    "usage: gamefn dlq ls [--stream S] [--consumer C] [--limit N] [--json]\n"
    "       gamefn dlq show DLQ_SEQ [--json]\n"
    "       gamefn dlq redrive (DLQ_SEQ... | --all [--stream S] [--consumer C]) [--json]\n\n"
    "The dead letters in stream DLQ (docs/EVENTS.md, \"Dead letters\"), oldest first.\n"
    "DLQ_SEQ is a letter's sequence in stream DLQ (the first column of ls).\n\n"
    "ls       the newest --limit letters (default 50, 1..100000)\n"
    "show     one letter: where it came from, why it died, its headers and its event\n"
    "redrive  publishes the original payload and headers to the original subject again,\n"
    "         with a fresh Nats-Msg-Id and Gamefn-Redrive (only the consumer group that\n"
    "         dead-lettered it applies it, at most once); the letter stays in DLQ\n\n"
    "  --stream S    only letters from stream S (ls, redrive --all)\n"
    "  --consumer C  only letters of a durable (leaderboard-p03) or of a partitioned\n"
    "                group (leaderboard) (ls, redrive --all)\n"
    "  --json        ls, redrive: a JSON array; show: an object, the payload in base64\n\n"
    "exit: 0 done, 2 usage, 3 NATS unreachable, 4 no letter at that sequence (redrive\n"
    "      --all: none matches) or no stream DLQ, 5 the JetStream API did not answer,\n"
    "      7 refused (permissions), 8 a letter that does not decode, a publish that failed\n";

static bool consumer_matches(const char *consumer, const char *want)
{
    if (!want)
        return true;
    size_t n = strlen(want);
    return strcmp(consumer, want) == 0 ||
           (strncmp(consumer, want, n) == 0 && strncmp(consumer + n, "-p", 2) == 0);
}

static bool letter_matches(const Gamefn__V1__DeadLetter *dl, const dlq_opts *o)
{
    return (!o->stream || strcmp(dl->stream, o->stream) == 0) &&
           consumer_matches(dl->consumer, o->consumer);
}

/* The letter at DLQ sequence seq into *out (to free): GF_CLI_OK; GF_CLI_NOT_FOUND when
 * none is there (nothing printed); another exit code after saying why. */
static int read_letter(jsCtx *js, const char *cmd, uint64_t seq, Gamefn__V1__DeadLetter **out)
{
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    *out = NULL;
    natsStatus s = js_GetMsg(&m, js, "DLQ", seq, NULL, &jerr);
    if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr)
        return GF_CLI_NOT_FOUND;
    if (s != NATS_OK) {
        char what[64];
        snprintf(what, sizeof what, "DLQ sequence %" PRIu64, seq);
        return gf_cli_js_error(cmd, what, s, jerr);
    }
    *out = gamefn__v1__dead_letter__unpack(NULL, (size_t)natsMsg_GetDataLength(m),
                                           (const uint8_t *)natsMsg_GetData(m));
    natsMsg_Destroy(m);
    if (!*out) {
        fprintf(stderr, "gamefn %s: DLQ sequence %" PRIu64 " is not a DeadLetter\n", cmd, seq);
        return GF_CLI_FAILED;
    }
    return GF_CLI_OK;
}

static const char *reason_name(Gamefn__V1__DeadLetterReason r)
{
    switch (r) {
    case GAMEFN__V1__DEAD_LETTER_REASON__DEAD_LETTER_REASON_MAX_DELIVERIES:
        return "max_deliveries";
    case GAMEFN__V1__DEAD_LETTER_REASON__DEAD_LETTER_REASON_TERMINATED:
        return "terminated";
    default:
        return "unknown";
    }
}

static char *time_text(int64_t unix_ms, char *buf, size_t size)
{
    return gf_clock_rfc3339(unix_ms * 1000000, 0, buf, size);
}

static json_t *letter_json(uint64_t dlq_seq, const Gamefn__V1__DeadLetter *dl, bool full)
{
    json_t *o = json_pack(
        "{s:I, s:s, s:s, s:I, s:s, s:I, s:s, s:s, s:I, s:I}", "dlq_seq", (json_int_t)dlq_seq,
        "stream", dl->stream, "consumer", dl->consumer, "stream_seq", (json_int_t)dl->stream_seq,
        "subject", dl->subject, "deliveries", (json_int_t)dl->deliveries, "reason",
        reason_name(dl->reason), "error", dl->error, "stored_unix_ms",
        (json_int_t)dl->stored_unix_ms, "dead_unix_ms", (json_int_t)dl->dead_unix_ms);
    if (!o || !full)
        return o;
    json_t *h = json_object();
    for (size_t i = 0; i < dl->n_headers; i++)
        json_object_set_new(h, dl->headers[i]->key, json_string(dl->headers[i]->value));
    json_object_set_new(o, "headers", h);
    size_t b64len = sodium_base64_encoded_len(dl->payload.len, sodium_base64_VARIANT_ORIGINAL);
    char *b64 = malloc(b64len);
    if (b64) {
        sodium_bin2base64(b64, b64len, dl->payload.data, dl->payload.len,
                          sodium_base64_VARIANT_ORIGINAL);
        json_object_set_new(o, "payload_base64", json_string(b64));
        free(b64);
    }
    return o;
}

/* Visits the DLQ from the newest letter back; visit returns false to stop. An exit code. */
typedef bool (*visit_fn)(uint64_t seq, Gamefn__V1__DeadLetter *dl, void *arg);

static int scan(jsCtx *js, const char *cmd, visit_fn visit, void *arg)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, js, "DLQ", NULL, &jerr);
    if (s != NATS_OK) {
        int rc = gf_cli_js_error(cmd, "stream DLQ", s, jerr);
        if (rc == GF_CLI_NOT_FOUND)
            fprintf(stderr, "gamefn %s: run `gamefn provision` to create it\n", cmd);
        return rc;
    }
    uint64_t first = si->State.FirstSeq, last = si->State.LastSeq;
    bool empty = si->State.Msgs == 0;
    jsStreamInfo_Destroy(si);
    for (uint64_t seq = last, n = 0; !empty && seq >= first && seq > 0 && n < SCAN_MAX;
         seq--, n++) {
        Gamefn__V1__DeadLetter *dl = NULL;
        int rc = read_letter(js, cmd, seq, &dl);
        if (rc != GF_CLI_OK && rc != GF_CLI_NOT_FOUND)
            return rc;
        bool go_on = rc == GF_CLI_NOT_FOUND || visit(seq, dl, arg);
        if (dl)
            gamefn__v1__dead_letter__free_unpacked(dl, NULL);
        if (!go_on)
            break;
    }
    return GF_CLI_OK;
}

/* ---- ls --------------------------------------------------------------------------- */

typedef struct listing {
    const dlq_opts *o;
    json_t *rows; /* newest first */
} listing;

static bool list_one(uint64_t seq, Gamefn__V1__DeadLetter *dl, void *arg)
{
    listing *l = arg;
    if (!letter_matches(dl, l->o))
        return true;
    json_array_append_new(l->rows, letter_json(seq, dl, false));
    return (long long)json_array_size(l->rows) < l->o->limit;
}

static int cmd_ls(jsCtx *js, const dlq_opts *o)
{
    listing l = {.o = o, .rows = json_array()};
    int rc = scan(js, "dlq ls", list_one, &l);
    if (rc != GF_CLI_OK) {
        json_decref(l.rows);
        return rc;
    }
    size_t n = json_array_size(l.rows);
    json_t *asc = json_array();
    for (size_t i = n; i > 0; i--)
        json_array_append(asc, json_array_get(l.rows, i - 1));
    json_decref(l.rows);
    if (o->json) {
        gf_cli_json_print(asc, true);
        return GF_CLI_OK;
    }
    if (n == 0)
        printf("no dead letters%s%s%s%s\n", o->stream ? " from stream " : "",
               o->stream ? o->stream : "", o->consumer ? " of consumer " : "",
               o->consumer ? o->consumer : "");
    else
        printf("%-8s %-20s %-10s %-18s %10s %5s %-14s %s\n", "DLQ_SEQ", "DEAD_AT", "STREAM",
               "CONSUMER", "SEQ", "DELIV", "REASON", "ERROR");
    size_t i;
    json_t *row;
    json_array_foreach(asc, i, row)
    {
        char when[40];
        printf(
            "%-8" JSON_INTEGER_FORMAT " %-20s %-10s %-18s %10" JSON_INTEGER_FORMAT
            " %5" JSON_INTEGER_FORMAT " %-14s %.80s\n",
            json_integer_value(json_object_get(row, "dlq_seq")),
            time_text(json_integer_value(json_object_get(row, "dead_unix_ms")), when, sizeof when),
            json_string_value(json_object_get(row, "stream")),
            json_string_value(json_object_get(row, "consumer")),
            json_integer_value(json_object_get(row, "stream_seq")),
            json_integer_value(json_object_get(row, "deliveries")),
            json_string_value(json_object_get(row, "reason")),
            json_string_value(json_object_get(row, "error")));
    }
    json_decref(asc);
    return GF_CLI_OK;
}

/* ---- show ------------------------------------------------------------------------- */

static bool parse_seq(const char *text, uint64_t *out)
{
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (!*text || *end || v == 0 || text[0] == '-')
        return false;
    *out = v;
    return true;
}

static void show_event(const Gamefn__V1__DeadLetter *dl)
{
    Gamefn__V1__GameEvent *ev = NULL;
    gf_event_problem why;
    if (gf_event_decode(dl->payload.data, dl->payload.len, &ev, &why) != GF_OK) {
        char text[300];
        gf_event_problem_format(&why, text, sizeof text);
        printf("  event:       (invalid: %s)\n", text);
        return;
    }
    printf("  event:       %s from %s seq %" PRIu64 ", player %s, type %s\n", ev->event_id,
           ev->source_id, ev->source_seq, ev->player_id, ev->event_type);
    if (ev->payload_case == GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE)
        printf("  score:       delta %" PRId64 " board '%s'\n", ev->score->delta,
               ev->score->board[0] ? ev->score->board : "global");
    gf_event_free(ev);
}

static int cmd_show(jsCtx *js, uint64_t seq, const dlq_opts *o)
{
    Gamefn__V1__DeadLetter *dl = NULL;
    int rc = read_letter(js, "dlq show", seq, &dl);
    if (rc == GF_CLI_NOT_FOUND)
        fprintf(stderr, "gamefn dlq show: no dead letter at DLQ sequence %" PRIu64 "\n", seq);
    if (rc != GF_CLI_OK)
        return rc;
    if (o->json) {
        gf_cli_json_print(letter_json(seq, dl, true), true);
    } else {
        char stored[40], dead[40];
        printf(
            "dead letter %" PRIu64 "\n  stream:      %s seq %" PRIu64 "\n  subject:     %s\n"
            "  consumer:    %s\n  reason:      %s after %" PRIu64 " deliveries\n"
            "  error:       %s\n  stored:      %s\n  dead:        %s\n  payload:     %zu bytes\n",
            seq, dl->stream, dl->stream_seq, dl->subject, dl->consumer, reason_name(dl->reason),
            dl->deliveries, dl->error[0] ? dl->error : "(none recorded)",
            time_text(dl->stored_unix_ms, stored, sizeof stored),
            time_text(dl->dead_unix_ms, dead, sizeof dead), dl->payload.len);
        for (size_t i = 0; i < dl->n_headers; i++)
            printf("  header:      %s: %s\n", dl->headers[i]->key, dl->headers[i]->value);
        if (strcmp(dl->stream, "EVENTS") == 0)
            show_event(dl);
    }
    gamefn__v1__dead_letter__free_unpacked(dl, NULL);
    return GF_CLI_OK;
}

/* ---- redrive ---------------------------------------------------------------------- */

static int redrive_one(jsCtx *js, uint64_t seq, const Gamefn__V1__DeadLetter *dl, json_t *out)
{
    dlq_plan plan;
    uint64_t nonce = ((uint64_t)gf_clock_unix_ms() << 16) ^ randombytes_random();
    if (dlq_plan_redrive(dl, seq, nonce, &plan) != GF_OK) {
        fprintf(stderr,
                "gamefn dlq redrive: DLQ sequence %" PRIu64 " has no subject to send "
                "it back to\n",
                seq);
        return GF_CLI_FAILED;
    }
    natsMsg *m = NULL;
    jsPubAck *ack = NULL;
    jsErrCode jerr = 0;
    natsStatus s = natsMsg_Create(&m, plan.subject, NULL, (const char *)dl->payload.data,
                                  (int)dl->payload.len);
    for (size_t i = 0; s == NATS_OK && i < plan.nheaders; i++)
        s = natsMsgHeader_Set(m, plan.hkeys[i], plan.hvalues[i]);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Nats-Msg-Id", plan.msg_id);
    if (s == NATS_OK)
        s = js_PublishMsg(&ack, js, m, NULL, &jerr);
    natsMsg_Destroy(m);
    if (s != NATS_OK) {
        fprintf(stderr, "gamefn dlq redrive: DLQ sequence %" PRIu64 ": publish to %s failed: %s\n",
                seq, plan.subject, natsStatus_GetText(s));
        return s == NATS_TIMEOUT ? GF_CLI_TIMEOUT : GF_CLI_FAILED;
    }
    json_array_append_new(out, json_pack("{s:I, s:s, s:s, s:s, s:I}", "dlq_seq", (json_int_t)seq,
                                         "subject", plan.subject, "msg_id", plan.msg_id, "stream",
                                         ack->Stream, "stream_seq", (json_int_t)ack->Sequence));
    jsPubAck_Destroy(ack);
    return GF_CLI_OK;
}

typedef struct redriving {
    jsCtx *js;
    const dlq_opts *o;
    json_t *done;
    int rc; /* the first failure's exit code */
} redriving;

static void note(redriving *r, int rc)
{
    if (r->rc == GF_CLI_OK)
        r->rc = rc;
}

static bool redrive_visit(uint64_t seq, Gamefn__V1__DeadLetter *dl, void *arg)
{
    redriving *r = arg;
    if (letter_matches(dl, r->o))
        note(r, redrive_one(r->js, seq, dl, r->done));
    return true;
}

static int cmd_redrive(jsCtx *js, int argc, char **argv, const dlq_opts *o)
{
    redriving r = {.js = js, .o = o, .done = json_array()};
    if (o->all) {
        note(&r, scan(js, "dlq redrive", redrive_visit, &r));
        if (r.rc == GF_CLI_OK && json_array_size(r.done) == 0) {
            fprintf(stderr, "gamefn dlq redrive: no dead letters match\n");
            r.rc = GF_CLI_NOT_FOUND;
        }
    }
    for (int i = 0; i < argc; i++) {
        uint64_t seq = 0;
        Gamefn__V1__DeadLetter *dl = NULL;
        parse_seq(argv[i], &seq); /* checked before connecting */
        int rc = read_letter(js, "dlq redrive", seq, &dl);
        if (rc == GF_CLI_NOT_FOUND)
            fprintf(stderr, "gamefn dlq redrive: no dead letter at DLQ sequence %" PRIu64 "\n",
                    seq);
        note(&r, rc == GF_CLI_OK ? redrive_one(js, seq, dl, r.done) : rc);
        if (dl)
            gamefn__v1__dead_letter__free_unpacked(dl, NULL);
    }
    size_t i;
    json_t *row;
    if (o->json)
        gf_cli_json_print(json_incref(r.done), true);
    else
        json_array_foreach(r.done, i, row)
        {
            printf("redriven DLQ %" JSON_INTEGER_FORMAT " -> %s seq %" JSON_INTEGER_FORMAT
                   " (%s)\n",
                   json_integer_value(json_object_get(row, "dlq_seq")),
                   json_string_value(json_object_get(row, "stream")),
                   json_integer_value(json_object_get(row, "stream_seq")),
                   json_string_value(json_object_get(row, "subject")));
        }
    json_decref(r.done);
    return r.rc;
}

/* ---- the command ------------------------------------------------------------------ */

int gf_cli_dlq(gf_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"stream", required_argument, NULL, 's'}, {"consumer", required_argument, NULL, 'c'},
        {"limit", required_argument, NULL, 'l'},  {"json", no_argument, NULL, 'j'},
        {"all", no_argument, NULL, 'a'},          {NULL, 0, NULL, 0},
    };
    if (argc < 2)
        return gf_cli_usage_error("dlq", "which one: ls, show or redrive?");
    const char *sub = argv[1];
    bool ls = strcmp(sub, "ls") == 0, show = strcmp(sub, "show") == 0,
         redrive = strcmp(sub, "redrive") == 0;
    if (!ls && !show && !redrive)
        return gf_cli_usage_error("dlq", "unknown subcommand '%s' (ls, show, redrive)", sub);
    dlq_opts o = {.limit = 50};
    int c;
    optind = 0;
    while ((c = getopt_long(argc - 1, argv + 1, "", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            o.stream = optarg;
            break;
        case 'c':
            o.consumer = optarg;
            break;
        case 'l':
            if (!gf_cli_integer("dlq", "--limit", optarg, 1, 100000, &o.limit))
                return GF_CLI_USAGE;
            break;
        case 'j':
            o.json = true;
            break;
        case 'a':
            o.all = true;
            break;
        default:
            return gf_cli_usage_error("dlq", "unknown option");
        }
    }
    int nargs = argc - 1 - optind;
    char **args = argv + 1 + optind;
    uint64_t seq = 0;
    if (ls && nargs)
        return gf_cli_usage_error("dlq", "ls takes no arguments");
    if (show && (nargs != 1 || !parse_seq(args[0], &seq)))
        return gf_cli_usage_error("dlq", "show needs one DLQ sequence (a number from "
                                         "`gamefn dlq ls`)");
    if (redrive && (o.all ? nargs != 0 : nargs == 0))
        return gf_cli_usage_error("dlq", "redrive needs DLQ sequences, or --all (not both)");
    for (int i = 0; redrive && i < nargs; i++)
        if (!parse_seq(args[i], &seq))
            return gf_cli_usage_error("dlq",
                                      "'%s' is not a DLQ sequence (a number from "
                                      "`gamefn dlq ls`)",
                                      args[i]);
    if ((o.stream || o.consumer) && !(ls || o.all))
        return gf_cli_usage_error("dlq", "--stream and --consumer go with ls or redrive --all");
    if (o.all && !redrive)
        return gf_cli_usage_error("dlq", "--all goes with redrive");
    gf_conn *conn = NULL;
    int rc = gf_cli_connect(cli, "dlq", &conn);
    if (rc != GF_CLI_OK)
        return rc;
    jsCtx *js = gf_conn_js(conn);
    rc = ls ? cmd_ls(js, &o) : show ? cmd_show(js, seq, &o) : cmd_redrive(js, nargs, args, &o);
    gf_conn_close(conn, 1000);
    return rc;
}
