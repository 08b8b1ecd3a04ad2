/*
 * emit_cmd.c — `gamefn emit`: events through the producer library, from flags or
 * from stdin (one per line, emit_event.h), with the library's spool and guarantees.
 *
 *   gamefn emit --source ID --spool DIR --type T [--player P] [event flags...]
 *   gamefn emit --source ID --spool DIR --stdin < events.txt
 *   gamefn emit --source ID --spool DIR          (no event: publish what is spooled)
 *
 * Every event is checked before the first is emitted: one bad event (exit 2) and
 * nothing is emitted. Then each is appended to the spool and published; the command
 * waits up to --timeout for the acknowledgements.
 *
 * Exit status: 0 every event (and anything left spooled before) acknowledged; 1 the
 * spool could not be used (locked by another process, belongs to another source, I/O);
 * 2 bad command line or a bad event, nothing emitted; 3 events spooled but not
 * acknowledged in time (NATS unreachable, no stream, stream full): they stay in the
 * spool for the next `gamefn emit` on it; 4 events dropped because the spool was full.
 */
#define _GNU_SOURCE /* getopt_long, getline */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "emit_event.h"
#include "gamefn/log.h"
#include "gamefn/producer.h"

enum {
    /* the CLI's exit codes (cli.h), as emit means them */
    EXIT_OK = GF_CLI_OK,
    EXIT_SPOOL = GF_CLI_FAILED,          /* the spool could not be used */
    EXIT_USAGE = GF_CLI_USAGE,           /* nothing emitted */
    EXIT_NOT_ACKED = GF_CLI_UNREACHABLE, /* spooled, not acknowledged in time: kept */
    EXIT_DROPPED = GF_CLI_REFUSED,       /* the spool was full */
    COUNT_MAX = 10000000,
};

typedef struct emit_opts {
    const char *source, *spool;
    bool from_stdin, json;
    int64_t timeout_ms;
    long long count;
    gf_producer_fsync fsync;
    uint32_t window;
} emit_opts;

/* The events to emit: the flags' one (count times) or one per stdin line. */
typedef struct batch {
    gf_emit_event *events;
    size_t *lineno; /* --stdin: each event's line */
    size_t n;
    char **lines; /* stdin's, which the events point into */
    size_t nlines;
} batch;

const char gf_cli_emit_help[] =
    "usage: gamefn emit --source ID --spool DIR [--type T --player P ...] [--stdin]\n"
    "                   [--count N] [--timeout MS] [--fsync always|interval|never]\n"
    "                   [--window W] [--json]\n"
    "event flags: --player --type --match --occurred MS | kill: --victim --weapon\n"
    "  --headshot --distance | score: --delta --board --reason | zone_change: --from\n"
    "  --to | crash: --signature --message --stack --build --platform | other types:\n"
    "  --attr KEY=VALUE (repeat) --data TEXT --content-type T\n"
    "--stdin: one event a line, key=value pairs with the flags' names, e.g.\n"
    "  player=p-alice type=kill victim=p-bob weapon=\"rocket launcher\"\n"
    "exit: 0 acknowledged, 2 bad input (nothing emitted), 3 spooled but not acknowledged\n"
    "      (kept for the next run), 7 events dropped (spool full), 8 spool unusable\n";

static void usage(FILE *f)
{
    fputs(gf_cli_emit_help, f);
}

static void batch_free(batch *b)
{
    for (size_t i = 0; i < b->nlines; i++)
        free(b->lines[i]);
    free(b->lines);
    free(b->events);
    free(b->lineno);
}

static int batch_push(batch *b, const gf_emit_event *e, size_t lineno)
{
    gf_emit_event *grown = realloc(b->events, (b->n + 1) * sizeof *grown);
    if (grown == NULL)
        return -1;
    b->events = grown;
    size_t *lines = realloc(b->lineno, (b->n + 1) * sizeof *lines);
    if (lines == NULL)
        return -1;
    b->lineno = lines;
    b->lineno[b->n] = lineno;
    b->events[b->n++] = *e;
    return 0;
}

/* Each event's attribute list lives in the event itself: once the array stops moving,
 * point every event at its own again. */
static void batch_settle(batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        b->events[i].ev.generic.attributes = b->events[i].attrs;
}

/* Every stdin line; the number of malformed ones (each printed), or -1 when out of
 * memory. */
static int read_stdin(batch *b)
{
    char *line = NULL;
    size_t cap = 0;
    int bad = 0;
    size_t lineno = 0;
    while (getline(&line, &cap, stdin) >= 0) {
        lineno++;
        char **lines = realloc(b->lines, (b->nlines + 1) * sizeof *lines);
        if (lines == NULL)
            return -1;
        b->lines = lines;
        b->lines[b->nlines++] = line; /* the event points into it */
        char why[200];
        gf_emit_event e;
        int rc = gf_emit_line(line, &e, why, sizeof why);
        line = NULL;
        cap = 0;
        if (rc < 0) {
            fprintf(stderr, "gamefn emit: stdin line %zu: %s\n", lineno, why);
            bad++;
        } else if (rc == 0 && batch_push(b, &e, lineno) != 0) {
            return -1;
        }
    }
    free(line);
    return bad;
}

static int parse_options(int argc, char **argv, emit_opts *o, gf_emit_event *flags,
                         bool *have_event)
{
    static const struct option longopts[] = {
        {"source", required_argument, NULL, 'S'},
        {"spool", required_argument, NULL, 'D'},
        {"stdin", no_argument, NULL, 'I'},
        {"json", no_argument, NULL, 'J'},
        {"timeout", required_argument, NULL, 'T'},
        {"count", required_argument, NULL, 'N'},
        {"fsync", required_argument, NULL, 'F'},
        {"window", required_argument, NULL, 'W'},
        {"help", no_argument, NULL, 'h'},
        {"headshot", optional_argument, NULL, 'e'},
        /* The event's keys (emit_event.h): the option's name is the key. */
        {"player", required_argument, NULL, 'e'},
        {"type", required_argument, NULL, 'e'},
        {"match", required_argument, NULL, 'e'},
        {"occurred", required_argument, NULL, 'e'},
        {"victim", required_argument, NULL, 'e'},
        {"weapon", required_argument, NULL, 'e'},
        {"distance", required_argument, NULL, 'e'},
        {"delta", required_argument, NULL, 'e'},
        {"board", required_argument, NULL, 'e'},
        {"reason", required_argument, NULL, 'e'},
        {"from", required_argument, NULL, 'e'},
        {"to", required_argument, NULL, 'e'},
        {"signature", required_argument, NULL, 'e'},
        {"message", required_argument, NULL, 'e'},
        {"stack", required_argument, NULL, 'e'},
        {"build", required_argument, NULL, 'e'},
        {"platform", required_argument, NULL, 'e'},
        {"attr", required_argument, NULL, 'e'},
        {"data", required_argument, NULL, 'e'},
        {"content-type", required_argument, NULL, 'e'},
        {NULL, 0, NULL, 0},
    };
    int c, index = 0;
    optind = 0; /* a fresh scan: argv is the command's */
    while ((c = getopt_long(argc, argv, "", longopts, &index)) != -1) {
        char *end = NULL, why[200];
        switch (c) {
        case 'S':
            o->source = optarg;
            break;
        case 'D':
            o->spool = optarg;
            break;
        case 'I':
            o->from_stdin = true;
            break;
        case 'J':
            o->json = true;
            break;
        case 'T':
            o->timeout_ms = strtoll(optarg, &end, 10);
            if (*end || o->timeout_ms < 0 || o->timeout_ms > 3600000) {
                fprintf(stderr, "gamefn emit: --timeout must be 0..3600000 ms\n");
                return -1;
            }
            break;
        case 'N':
            o->count = strtoll(optarg, &end, 10);
            if (*end || o->count < 1 || o->count > COUNT_MAX) {
                fprintf(stderr, "gamefn emit: --count must be 1..%d\n", COUNT_MAX);
                return -1;
            }
            break;
        case 'F':
            if (strcmp(optarg, "always") == 0)
                o->fsync = GF_PRODUCER_FSYNC_ALWAYS;
            else if (strcmp(optarg, "interval") == 0)
                o->fsync = GF_PRODUCER_FSYNC_INTERVAL;
            else if (strcmp(optarg, "never") == 0)
                o->fsync = GF_PRODUCER_FSYNC_NEVER;
            else {
                fprintf(stderr, "gamefn emit: --fsync must be always, interval or never\n");
                return -1;
            }
            break;
        case 'W': {
            long long w = strtoll(optarg, &end, 10);
            if (*end || w < 1 || w > 1048576) {
                fprintf(stderr, "gamefn emit: --window must be 1..1048576\n");
                return -1;
            }
            o->window = (uint32_t)w;
            break;
        }
        case 'e':
            if (gf_emit_set(flags, longopts[index].name, optarg ? optarg : "true", why,
                            sizeof why) != 0) {
                fprintf(stderr, "gamefn emit: --%s\n", why);
                return -1;
            }
            *have_event = true;
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gamefn emit: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (!o->source || !o->spool) {
        fprintf(stderr, "gamefn emit: --source and --spool are required\n");
        return -1;
    }
    if (*have_event && o->from_stdin) {
        fprintf(stderr, "gamefn emit: give the event by flags or --stdin, not both\n");
        return -1;
    }
    return 0;
}

/* Every event as emit would check it; the number of bad ones (each printed). */
static size_t check_all(const emit_opts *o, const batch *b)
{
    size_t bad = 0;
    for (size_t i = 0; i < b->n; i++) {
        gf_producer_receipt r;
        if (gf_producer_check_event(o->source, &b->events[i].ev, &r) == GF_OK)
            continue;
        bad++;
        if (o->from_stdin)
            fprintf(stderr, "gamefn emit: stdin line %zu: %s%s%s\n", b->lineno[i], r.field,
                    r.field[0] ? ": " : "", r.why);
        else
            fprintf(stderr, "gamefn emit: %s%s%s\n", r.field, r.field[0] ? ": " : "", r.why);
        if (r.field[0] == '\0' || strcmp(r.field, "source_id") == 0)
            break; /* the same for every event */
    }
    return bad;
}

static void print_json(const emit_opts *o, const gf_producer_stats *st, size_t emitted,
                       uint64_t first, uint64_t last, int code)
{
    json_t *j = json_pack(
        "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:i, s:i}", "source",
        o->source, "spool", o->spool, "emitted", (json_int_t)emitted, "first_seq",
        (json_int_t)first, "last_seq", (json_int_t)last, "produced", (json_int_t)st->produced,
        "acknowledged", (json_int_t)st->acknowledged, "spooled", (json_int_t)st->spooled,
        "replayed", (json_int_t)st->replayed, "dropped", (json_int_t)st->dropped, "next_seq",
        (json_int_t)st->next_seq, "state", gf_producer_state_str(st->state), "reason", st->reason,
        "js_code", st->js_code, "exit", code);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (text)
        printf("%s\n", text);
    free(text);
    json_decref(j);
}

/* Emits the batch and waits for the acknowledgements; the exit status. */
static int run(const gf_config *cfg, const emit_opts *o, const batch *b)
{
    gf_producer_config pc;
    memset(&pc, 0, sizeof pc);
    pc.source_id = o->source;
    pc.spool_dir = o->spool;
    pc.nats = &cfg->nats;
    pc.fsync = o->fsync;
    pc.window = o->window;
    gf_producer *p = NULL;
    gf_err err = gf_producer_open(&pc, &p);
    if (err != GF_OK) {
        fprintf(stderr, "gamefn emit: cannot use spool %s as %s: %s%s\n", o->spool, o->source,
                gf_err_str(err),
                err == GF_ERR_CONFLICT ? " (another process has it open)"
                : err == GF_ERR_CONFIG ? " (it belongs to another source)"
                                       : "");
        return err == GF_ERR_INVALID ? EXIT_USAGE : EXIT_SPOOL;
    }
    size_t emitted = 0, dropped = 0;
    uint64_t first = 0, last = 0;
    int code = EXIT_OK;
    for (long long k = 0; k < (b->n ? o->count : 0); k++)
        for (size_t i = 0; i < b->n && code == EXIT_OK; i++) {
            gf_producer_receipt r;
            err = gf_producer_emit(p, &b->events[i].ev, &r);
            if (err == GF_OK || err == GF_ERR_UNAVAILABLE) {
                first = first ? first : r.seq;
                last = r.seq;
            }
            if (err == GF_OK)
                emitted++;
            else if (err == GF_ERR_UNAVAILABLE)
                dropped++;
            else {
                fprintf(stderr, "gamefn emit: event %zu not accepted: %s\n", i + 1, r.why);
                code = EXIT_SPOOL;
            }
        }
    gf_err flushed = gf_producer_flush(p, o->timeout_ms);
    gf_producer_stats st;
    gf_producer_stats_get(p, &st);
    if (code == EXIT_OK && dropped > 0)
        code = EXIT_DROPPED;
    else if (code == EXIT_OK && flushed != GF_OK)
        code = EXIT_NOT_ACKED;
    if (!o->json) {
        printf("%zu event(s) emitted as %s", emitted, o->source);
        if (emitted)
            printf(" (seq %" PRIu64 "..%" PRIu64 ")", first, last);
        if (st.replayed)
            printf(", %" PRIu64 " published again from the spool", st.replayed);
        printf("\n");
    } else {
        print_json(o, &st, emitted, first, last, code);
    }
    if (dropped)
        fprintf(stderr,
                "gamefn emit: %zu event(s) DROPPED: the spool %s is full (spool_max_bytes)\n",
                dropped, o->spool);
    if (flushed != GF_OK)
        fprintf(stderr,
                "gamefn emit: %" PRIu64 " event(s) spooled in %s and not acknowledged after "
                "%" PRId64 " ms: %s%s%s. They stay spooled: run `gamefn emit --source %s "
                "--spool %s` again (no event) to publish them.\n",
                st.spooled, o->spool, o->timeout_ms, gf_producer_state_str(st.state),
                st.reason[0] ? ": " : "", st.reason, o->source, o->spool);
    gf_producer_close(p, 0);
    return code;
}

int gf_cli_emit(gf_cli *cli, int argc, char **argv)
{
    const gf_config *cfg = cli->cfg;
    emit_opts o = {.timeout_ms = 10000, .count = 1};
    gf_emit_event flags;
    gf_emit_event_init(&flags);
    bool have_event = false;
    int rc = parse_options(argc, argv, &o, &flags, &have_event);
    if (rc != 0)
        return rc > 0 ? EXIT_OK : EXIT_USAGE;
    /* The CLI prints its own summary: the library's info lines only with debug. */
    if (gf_log_get_level() == GF_LOG_INFO)
        gf_log_set_level(GF_LOG_WARN);
    batch b = {0};
    int malformed = o.from_stdin ? read_stdin(&b) : 0;
    if (malformed < 0 || (have_event && batch_push(&b, &flags, 0) != 0)) {
        fprintf(stderr, "gamefn emit: out of memory\n");
        batch_free(&b);
        return EXIT_SPOOL;
    }
    batch_settle(&b);
    if (check_all(&o, &b) + (size_t)malformed > 0) {
        fprintf(stderr, "gamefn emit: nothing emitted\n");
        batch_free(&b);
        return EXIT_USAGE;
    }
    rc = run(cfg, &o, &b);
    batch_free(&b);
    return rc;
}
