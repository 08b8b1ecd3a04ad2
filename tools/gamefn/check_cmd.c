/*
 * check_cmd.c — `gamefn check`: the independent checker (tools/check) against a live
 * deployment. Reads what the deployment recorded (gamefn/check/check_read.h), prints
 * every count with its name, explanation, detail and examples, exits 1 when any
 * checked count is not 0. `--json` is the run report's check.json (format 1,
 * docs/REPORT.md) with more fields.
 */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_print.h"
#include "cli.h"
#include "gamefn/check/check_read.h"
#include "gamefn/clock.h"
#include "gamefn/tickets/config.h"

const char gf_cli_check_help[] =
    "usage: gamefn check [--json] [--out FILE] [--since T] [--events-log FILE]\n"
    "                    [--board NAME=incr|best|set[:asc]]... [--grace D]\n"
    "                    [--max-match-duration D] [--catch-up D] [--settle D]\n"
    "                    [--no-events] [--no-scores] [--examples N]\n\n"
    "Recomputes every invariant from what the deployment recorded, not from the functions'\n"
    "counters: the AUDIT_TICKETS, AUDIT_MATCHES and AUDIT_PLAYERS mirrors (every revision of\n"
    "the tickets, matches and players buckets), what is left in MATCHES, EVENTS and DLQ,\n"
    "and the boards' scores (gamefn.v1.leaderboard.query). Prints each count with its name,\n"
    "what it counts and examples; docs/OPERATIONS.md (\"gamefn check\") defines them.\n"
    "Limits are recomputed from the queue table in the config (functions.matcher).\n\n"
    "  --json             check.json format 1 (docs/REPORT.md) on stdout\n"
    "  --out FILE         also write that JSON to FILE (whole: a temporary file renamed)\n"
    "  --since T          only tickets created from T on: a duration ago (10m), an RFC 3339\n"
    "                     time (2026-01-01T12:00:00Z) or Unix milliseconds\n"
    "  --events-log FILE  the producers' log of emitted and acknowledged events (format in\n"
    "                     docs/OPERATIONS.md); without it only the boards are compared\n"
    "  --board NAME=OP    how board NAME folds its score events: incr (default), best or\n"
    "                     set, ':asc' for lower-is-better\n"
    "  --grace D          a deadline (TTL, claim lease, commit) counts as missed only D\n"
    "                     after it (default 5s)\n"
    "  --max-match-duration D  functions.intake.max_match_duration (default 2h)\n"
    "  --catch-up D       a mirror behind its bucket that takes no revision for D has\n"
    "                     stalled: the rest is read from the bucket (default 10s)\n"
    "  --settle D         wait up to D for the leaderboard consumers to drain (10s)\n"
    "  --no-events        skip EVENTS, DLQ and scores (the event counts: not checked)\n"
    "  --no-scores        skip the boards' scores\n"
    "  --examples N       examples per count, 0..100 (default 5)\n\n"
    "Progress goes to stderr while reading takes long. Needs read access only (stream and\n"
    "consumer info, ordered consumers, message get, the leaderboard query).\n\n"
    "exit: 0 every checked invariant holds, 1 at least one count is not 0, 2 usage or a\n"
    "      malformed events log, 3 NATS unreachable, 4 events log not found, 5 the JetStream\n"
    "      API did not answer (disabled, or not permitted), 8 reading failed\n";

typedef struct copts {
    bool json, no_events, no_scores;
    const char *out, *since, *events_log;
    int64_t grace_ms, max_match_ms, catch_up_ms, settle_ms;
    long examples;
    gf_check_board_spec boards[32];
    size_t nboards;
} copts;

/* "NAME=incr|best|set[:asc|:desc]" */
static bool parse_board(copts *o, char *arg)
{
    char *eq = strchr(arg, '=');
    if (!eq || o->nboards == 32)
        return false;
    *eq = 0;
    char *op = eq + 1, *dir = strchr(op, ':');
    if (dir)
        *dir++ = 0;
    gf_check_board_spec *b = &o->boards[o->nboards];
    b->name = arg;
    b->ascending = dir && strcmp(dir, "asc") == 0;
    if (dir && !b->ascending && strcmp(dir, "desc") != 0)
        return false;
    if (strcmp(op, "incr") == 0)
        b->op = GF_CHECK_BOARD_INCR;
    else if (strcmp(op, "best") == 0)
        b->op = GF_CHECK_BOARD_BEST;
    else if (strcmp(op, "set") == 0)
        b->op = GF_CHECK_BOARD_SET;
    else
        return false;
    o->nboards++;
    return arg[0] != 0;
}

static int parse(int argc, char **argv, copts *o)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"out", required_argument, NULL, 'o'},
        {"since", required_argument, NULL, 's'},
        {"events-log", required_argument, NULL, 'e'},
        {"board", required_argument, NULL, 'b'},
        {"grace", required_argument, NULL, 'g'},
        {"max-match-duration", required_argument, NULL, 'm'},
        {"catch-up", required_argument, NULL, 'c'},
        {"settle", required_argument, NULL, 't'},
        {"no-events", no_argument, NULL, 'E'},
        {"no-scores", no_argument, NULL, 'S'},
        {"examples", required_argument, NULL, 'x'},
        {NULL, 0, NULL, 0},
    };
    const int64_t day = 24LL * 3600 * 1000;
    int c;
    char *end = NULL;
    optind = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        bool ok = true;
        switch (c) {
        case 'j':
            o->json = true;
            break;
        case 'o':
            o->out = optarg;
            break;
        case 's':
            o->since = optarg;
            break;
        case 'e':
            o->events_log = optarg;
            break;
        case 'b':
            if (!parse_board(o, optarg))
                return gf_cli_usage_error("check", "--board takes NAME=incr|best|set[:asc|:desc]");
            break;
        case 'g':
            ok = gf_cli_duration("check", "--grace", optarg, 0, day, &o->grace_ms);
            break;
        case 'm':
            ok = gf_cli_duration("check", "--max-match-duration", optarg, 1, 30 * day,
                                 &o->max_match_ms);
            break;
        case 'c':
            ok = gf_cli_duration("check", "--catch-up", optarg, 1, 3600000, &o->catch_up_ms);
            break;
        case 't':
            ok = gf_cli_duration("check", "--settle", optarg, 1, 3600000, &o->settle_ms);
            break;
        case 'E':
            o->no_events = true;
            break;
        case 'S':
            o->no_scores = true;
            break;
        case 'x':
            o->examples = strtol(optarg, &end, 10);
            if (*end || o->examples < 0 || o->examples > 100)
                return gf_cli_usage_error("check", "--examples must be 0..100");
            break;
        default:
            return gf_cli_usage_error("check", "unknown option");
        }
        if (!ok)
            return GF_CLI_USAGE;
    }
    if (optind < argc)
        return gf_cli_usage_error("check", "unexpected argument '%s'", argv[optind]);
    return GF_CLI_OK;
}

/* The queue table of the config, for the limits; NULL (with a note) when absent. */
static gf_mm_tables *queue_table(const char *path, gf_config **mmcfg, char *note, size_t size)
{
    gf_config_error err;
    char why[256];
    if (gf_mm_config_load(path, mmcfg, &err) != GF_OK) {
        snprintf(note, size, "no queue table (%s): limits not checked", err.message);
        return NULL;
    }
    const gf_mm_config *mm = gf_config_function(*mmcfg);
    gf_mm_tables *t = calloc(1, sizeof *t);
    if (!t || !mm || gf_mm_tables_build(&mm->matchmaking, t, why, sizeof why) != GF_OK) {
        snprintf(note, size, "the queue table does not check (%s): limits not checked",
                 t && mm ? why : "no functions.matcher section");
        free(t);
        return NULL;
    }
    return t;
}

/* The tickets bucket's TTL as the server has it (the checker's ticket_ttl_ms). */
static int64_t tickets_ttl(jsCtx *js, int64_t fallback)
{
    jsStreamInfo *si = NULL;
    int64_t ttl = fallback;
    if (js_GetStreamInfo(&si, js, "KV_tickets", NULL, NULL) == NATS_OK && si->Config)
        ttl = si->Config->MaxAge / 1000000;
    jsStreamInfo_Destroy(si);
    return ttl;
}

typedef struct meter {
    int64_t start, last;
    bool tty, shown;
} meter;

static void on_progress(void *closure, const char *stream, uint64_t done, uint64_t total)
{
    meter *m = closure;
    int64_t now = gf_clock_mono_ms();
    if (now - m->start < 1000 || (!m->tty && now - m->last < 5000 && done < total))
        return;
    char a[32], b[32];
    m->last = now;
    m->shown = true;
    fprintf(stderr, "%sreading %s: %s of %s messages%s", m->tty ? "\r\033[K" : "", stream,
            gf_cli_thousands(done, a, sizeof a), gf_cli_thousands(total, b, sizeof b),
            m->tty ? "" : "\n");
}

/* Reads the whole events log file into the checker. An exit code. */
static int load_events_log(gf_check *c, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "gamefn check: cannot open the events log %s\n", path);
        return GF_CLI_NOT_FOUND;
    }
    char *text = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&text, &cap, '\0', f);
    fclose(f);
    char why[200] = "";
    gf_err err = gf_check_events_log(c, text ? text : "", n > 0 ? (size_t)n : 0, why, sizeof why);
    free(text);
    if (err != GF_OK) {
        fprintf(stderr, "gamefn check: %s:%s\n", path,
                err == GF_ERR_NOMEM ? " out of memory" : why);
        return err == GF_ERR_NOMEM ? GF_CLI_FAILED : GF_CLI_USAGE;
    }
    return GF_CLI_OK;
}

static int run(gf_cli *cli, copts *o, gf_check_params *p, char *note, size_t note_size)
{
    gf_conn *conn = NULL;
    int rc = gf_cli_connect(cli, "check", &conn);
    if (rc != GF_CLI_OK)
        return rc;
    p->ticket_ttl_ms = tickets_ttl(gf_conn_js(conn), p->ticket_ttl_ms);
    gf_check *c = NULL;
    if (gf_check_new(p, &c) != GF_OK) {
        fprintf(stderr, "gamefn check: out of memory\n");
        gf_conn_close(conn, 0);
        return GF_CLI_FAILED;
    }
    if (o->events_log)
        rc = load_events_log(c, o->events_log);
    meter m = {gf_clock_mono_ms(), 0, isatty(STDERR_FILENO) == 1, false};
    gf_check_read_opts ro = {.since_ms = p->since_ms,
                             .catch_up_ms = o->catch_up_ms,
                             .settle_ms = o->settle_ms,
                             .no_events = o->no_events,
                             .no_scores = o->no_scores,
                             .boards = o->boards,
                             .boards_len = o->nboards,
                             .progress = on_progress,
                             .closure = &m};
    gf_check_read_notes notes;
    char why[300] = "";
    gf_err err = GF_OK;
    if (rc == GF_CLI_OK) {
        err = gf_check_read(gf_conn_nats(conn), gf_conn_js(conn), c, &ro, &notes, why, sizeof why);
        if (m.shown && m.tty)
            fprintf(stderr, "\r\033[K");
        if (err != GF_OK) {
            fprintf(stderr, "gamefn check: %s\n", why);
            rc = err == GF_ERR_UNAVAILABLE ? GF_CLI_UNREACHABLE
                 : err == GF_ERR_TIMEOUT   ? GF_CLI_TIMEOUT
                                           : GF_CLI_FAILED;
        }
    }
    if (rc == GF_CLI_OK && o->no_events)
        gf_check_missing(c, GF_CHECK_SRC_EVENTS, "not read (--no-events)");
    const gf_check_report *r = NULL;
    if (rc == GF_CLI_OK && gf_check_finish(c, &r) != GF_OK) {
        fprintf(stderr, "gamefn check: out of memory\n");
        rc = GF_CLI_FAILED;
    }
    if (rc == GF_CLI_OK) {
        size_t n = strlen(note);
        if (notes.text[0])
            snprintf(note + n, note_size - n, "%s%s", n ? "; " : "", notes.text);
        rc = gf_check_print(r, p, note, o->json, o->out);
    }
    gf_check_free(c);
    gf_conn_close(conn, 1000);
    return rc;
}

int gf_cli_check(gf_cli *cli, int argc, char **argv)
{
    copts o;
    memset(&o, 0, sizeof o);
    o.examples = 5;
    int rc = parse(argc, argv, &o);
    if (rc != GF_CLI_OK)
        return rc;
    gf_check_params p;
    gf_check_params_default(&p);
    p.now_ms = gf_clock_unix_ms();
    p.max_examples = (size_t)o.examples;
    if (o.grace_ms)
        p.grace_ms = o.grace_ms;
    if (o.max_match_ms)
        p.max_match_ms = o.max_match_ms;
    if (o.since && !gf_cli_since("check", "--since", o.since, &p.since_ms))
        return GF_CLI_USAGE;
    char note[1400] = "";
    gf_config *mmcfg = NULL;
    gf_mm_tables *tables = queue_table(cli->config_path, &mmcfg, note, sizeof note);
    p.queues = tables ? &tables->cfg : NULL;
    rc = run(cli, &o, &p, note, sizeof note);
    free(tables);
    gf_config_free(mmcfg);
    return rc;
}
