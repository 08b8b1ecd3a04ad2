/*
 * status_cmd.c — `gamefn status`: what runs and how it is doing, in one view.
 *
 *   functions   every instance that answers $SRV.INFO and $SRV.STATS (plain
 *               subscriptions: every instance answers), with its health and its
 *               endpoints' counters;
 *   streams     every stream with its messages, bytes, sequences and consumers, a
 *               mirror with its lag behind its origin;
 *   consumers   every consumer of every stream: pending (not yet delivered), ack pending
 *               (delivered, not yet acked), redelivered, waiting pull requests.
 *
 * Design notes: answers are collected from one inbox until `--wait` passes without a new
 * one; INFO and STATS are joined by (name, id). The JSON form is built first and the
 * text form printed from it, so both say the same.
 */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char gf_cli_status_help[] =
    "usage: gamefn status [--json] [--function NAME] [--stream NAME] [--wait MS]\n\n"
    "Shows every function instance found through $SRV.INFO and $SRV.STATS with its health\n"
    "(an unhealthy instance says why) and its endpoints' counters; every stream with its\n"
    "messages, bytes and sequences (a mirror with its lag); every consumer with pending,\n"
    "ack pending, redelivered and waiting counts. Needs $SRV and JetStream API access\n"
    "(the admin role).\n\n"
    "  --json           one JSON object {functions, streams, consumers}\n"
    "  --function NAME  only that function's instances (exit 4 if none answers)\n"
    "  --stream NAME    only that stream and its consumers (exit 4 if it does not exist)\n"
    "  --wait MS        how long to wait for more $SRV answers (1..60000, default 500)\n\n"
    "exit: 0 shown, 2 usage, 3 NATS unreachable, 4 unknown function or stream,\n"
    "      7 JetStream refused (permissions, not enabled)\n";

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static json_t *find_instance(json_t *list, const char *name, const char *id)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x)
    {
        if (strcmp(str(x, "name"), name) == 0 && strcmp(str(x, "id"), id) == 0)
            return x;
    }
    return NULL;
}

/* One entry per instance: STATS (counters, health) joined with INFO (description). */
static json_t *functions_json(natsConnection *nc, const char *name, int64_t wait_ms)
{
    char subject[160];
    snprintf(subject, sizeof subject, "$SRV.STATS%s%s", name ? "." : "", name ? name : "");
    json_t *stats = gf_cli_srv_collect(nc, subject, wait_ms);
    snprintf(subject, sizeof subject, "$SRV.INFO%s%s", name ? "." : "", name ? name : "");
    json_t *infos = gf_cli_srv_collect(nc, subject, wait_ms);
    json_t *out = json_array();
    size_t i;
    json_t *s;
    json_array_foreach(stats, i, s)
    {
        json_t *md = json_object_get(s, "metadata");
        json_t *info = find_instance(infos, str(s, "name"), str(s, "id"));
        json_t *eps = json_array();
        size_t k;
        json_t *ep;
        json_array_foreach(json_object_get(s, "endpoints"), k, ep)
        {
            json_array_append_new(
                eps,
                json_pack("{s:s, s:s, s:s, s:O?, s:O?, s:O?, s:O?, s:O?, s:s}", "name",
                          str(ep, "name"), "subject", str(ep, "subject"), "queue_group",
                          str(ep, "queue_group"), "requests", json_object_get(ep, "num_requests"),
                          "errors", json_object_get(ep, "num_errors"), "dropped",
                          json_object_get(ep, "num_dropped"), "refused",
                          json_object_get(ep, "num_refused"), "average_processing_ns",
                          json_object_get(ep, "average_processing_time"), "last_error",
                          str(ep, "last_error")));
        }
        json_array_append_new(
            out, json_pack("{s:s, s:s, s:s, s:s, s:b, s:s, s:s, s:o}", "name", str(s, "name"), "id",
                           str(s, "id"), "version", str(s, "version"), "description",
                           info ? str(info, "description") : "", "healthy",
                           strcmp(str(md, "healthy"), "false") != 0, "unhealthy",
                           str(md, "unhealthy"), "started", str(s, "started"), "endpoints", eps));
    }
    json_decref(stats);
    json_decref(infos);
    return out;
}

static json_t *stream_json(const jsStreamInfo *si)
{
    json_t *subjects = json_array();
    for (int i = 0; si->Config && i < si->Config->SubjectsLen; i++)
        json_array_append_new(subjects, json_string(si->Config->Subjects[i]));
    json_t *j =
        json_pack("{s:s, s:I, s:I, s:I, s:I, s:i, s:o}", "name", si->Config->Name, "messages",
                  (json_int_t)si->State.Msgs, "bytes", (json_int_t)si->State.Bytes, "first_seq",
                  (json_int_t)si->State.FirstSeq, "last_seq", (json_int_t)si->State.LastSeq,
                  "consumers", (int)si->State.Consumers, "subjects", subjects);
    if (si->Mirror) {
        json_object_set_new(j, "mirror", json_string(si->Mirror->Name ? si->Mirror->Name : ""));
        json_object_set_new(j, "mirror_lag", json_integer((json_int_t)si->Mirror->Lag));
    }
    return j;
}

static json_t *consumer_json(const jsConsumerInfo *ci)
{
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "stream", ci->Stream, "name",
                     ci->Name, "pending", (json_int_t)ci->NumPending, "ack_pending",
                     (json_int_t)ci->NumAckPending, "redelivered", (json_int_t)ci->NumRedelivered,
                     "waiting", (json_int_t)ci->NumWaiting, "delivered_stream_seq",
                     (json_int_t)ci->Delivered.Stream, "ack_floor_stream_seq",
                     (json_int_t)ci->AckFloor.Stream, "push_bound", ci->PushBound);
}

/* Streams and consumers into *streams / *consumers; an exit code. */
static int jetstream_json(jsCtx *js, const char *only, json_t *streams, json_t *consumers)
{
    jsStreamInfoList *list = NULL;
    jsStreamInfo *one = NULL;
    jsErrCode jerr = 0;
    natsStatus s;
    if (only) {
        s = js_GetStreamInfo(&one, js, only, NULL, &jerr);
        if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) {
            fprintf(stderr, "gamefn status: no stream named '%s'\n", only);
            return GF_CLI_NOT_FOUND;
        }
    } else {
        s = js_Streams(&list, js, NULL, &jerr);
        if (s == NATS_NOT_FOUND) /* no stream at all */
            return GF_CLI_OK;
    }
    if (s != NATS_OK) {
        fprintf(stderr,
                "gamefn status: cannot list streams: %s (JetStream enabled? the admin role?)\n",
                natsStatus_GetText(s));
        return GF_CLI_REFUSED;
    }
    int n = only ? 1 : list->Count;
    for (int i = 0; i < n; i++) {
        const jsStreamInfo *si = only ? one : list->List[i];
        json_array_append_new(streams, stream_json(si));
        jsConsumerInfoList *cl = NULL;
        if (si->State.Consumers > 0 &&
            js_Consumers(&cl, js, si->Config->Name, NULL, NULL) == NATS_OK) {
            for (int k = 0; k < cl->Count; k++)
                json_array_append_new(consumers, consumer_json(cl->List[k]));
            jsConsumerInfoList_Destroy(cl);
        }
    }
    jsStreamInfoList_Destroy(list);
    jsStreamInfo_Destroy(one);
    return GF_CLI_OK;
}

static void print_text(json_t *fns, json_t *streams, json_t *consumers)
{
    size_t i, k;
    json_t *x, *ep;
    char a[32], b[32];
    printf("FUNCTIONS (%zu instances)\n", json_array_size(fns));
    if (json_array_size(fns))
        printf("  %-12s %-22s %-8s %-9s %-12s %10s %7s %7s %7s %9s\n", "FUNCTION", "INSTANCE",
               "VERSION", "HEALTH", "ENDPOINT", "REQUESTS", "ERRORS", "DROPPED", "REFUSED",
               "AVG_US");
    json_array_foreach(fns, i, x)
    {
        bool healthy = json_is_true(json_object_get(x, "healthy"));
        json_t *eps = json_object_get(x, "endpoints");
        if (json_array_size(eps) == 0)
            printf("  %-12s %-22s %-8s %-9s\n", str(x, "name"), str(x, "id"), str(x, "version"),
                   healthy ? "healthy" : "UNHEALTHY");
        /* Endpoints sharing a subject (a request endpoint's concurrent handlers,
         * "create-0".."create-31") are one row with their sums. */
        for (k = 0; k < json_array_size(eps);) {
            ep = json_array_get(eps, k);
            size_t same = 1;
            long long sum[4] = {0}, ns = 0;
            static const char *const keys[] = {"requests", "errors", "dropped", "refused"};
            for (; k < json_array_size(eps); k++, same++) {
                json_t *e = json_array_get(eps, k);
                if (strcmp(str(e, "subject"), str(ep, "subject")) != 0)
                    break;
                for (int q = 0; q < 4; q++)
                    sum[q] += (long long)json_integer_value(json_object_get(e, keys[q]));
                ns += (long long)json_integer_value(json_object_get(e, "requests")) *
                      (long long)json_integer_value(json_object_get(e, "average_processing_ns"));
            }
            char label[48];
            snprintf(label, sizeof label, "%s%s", str(ep, "name"), same > 2 ? " (x" : "");
            if (same > 2) {
                size_t n = strlen(label);
                snprintf(label + n, sizeof label - n, "%zu)", same - 1);
            }
            printf("  %-12s %-22s %-8s %-9s %-12s %10lld %7lld %7lld %7lld %9.1f\n", str(x, "name"),
                   str(x, "id"), str(x, "version"), healthy ? "healthy" : "UNHEALTHY", label,
                   sum[0], sum[1], sum[2], sum[3],
                   sum[0] ? (double)ns / (double)sum[0] / 1e3 : 0.0);
        }
        if (!healthy)
            printf("    %s %s is unhealthy: %s\n", str(x, "name"), str(x, "id"),
                   str(x, "unhealthy"));
    }
    printf("\nSTREAMS (%zu)\n", json_array_size(streams));
    if (json_array_size(streams))
        printf("  %-16s %12s %14s %12s %12s %9s  %s\n", "STREAM", "MESSAGES", "BYTES", "FIRST",
               "LAST", "CONSUMERS", "NOTE");
    json_array_foreach(streams, i, x)
    {
        char note[160] = "";
        if (json_object_get(x, "mirror"))
            snprintf(note, sizeof note, "mirror of %s, lag %lld", str(x, "mirror"),
                     (long long)json_integer_value(json_object_get(x, "mirror_lag")));
        printf("  %-16s %12s %14s %12lld %12lld %9lld  %s\n", str(x, "name"),
               gf_cli_thousands((uint64_t)json_integer_value(json_object_get(x, "messages")), a,
                                sizeof a),
               gf_cli_thousands((uint64_t)json_integer_value(json_object_get(x, "bytes")), b,
                                sizeof b),
               (long long)json_integer_value(json_object_get(x, "first_seq")),
               (long long)json_integer_value(json_object_get(x, "last_seq")),
               (long long)json_integer_value(json_object_get(x, "consumers")), note);
    }
    printf("\nCONSUMERS (%zu)\n", json_array_size(consumers));
    if (json_array_size(consumers))
        printf("  %-16s %-24s %12s %12s %12s %8s\n", "STREAM", "CONSUMER", "PENDING", "ACK_PENDING",
               "REDELIVERED", "WAITING");
    json_array_foreach(consumers, i, x)
    {
        printf("  %-16s %-24s %12lld %12lld %12lld %8lld\n", str(x, "stream"), str(x, "name"),
               (long long)json_integer_value(json_object_get(x, "pending")),
               (long long)json_integer_value(json_object_get(x, "ack_pending")),
               (long long)json_integer_value(json_object_get(x, "redelivered")),
               (long long)json_integer_value(json_object_get(x, "waiting")));
    }
}

int gf_cli_status(gf_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"function", required_argument, NULL, 'f'},
        {"stream", required_argument, NULL, 's'},
        {"wait", required_argument, NULL, 'w'},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    const char *function = NULL, *stream = NULL;
    int64_t wait_ms = 500;
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'j')
            json = true;
        else if (c == 'f')
            function = optarg;
        else if (c == 's')
            stream = optarg;
        else if (c == 'w') {
            long long v = 0;
            if (!gf_cli_integer("status", "--wait", optarg, 1, 60000, &v))
                return GF_CLI_USAGE;
            wait_ms = v;
        } else
            return gf_cli_usage_error("status", "unknown option");
    }
    if (optind < argc)
        return gf_cli_usage_error("status", "unexpected argument '%s'", argv[optind]);
    gf_conn *conn = NULL;
    int rc = gf_cli_connect(cli, "status", &conn);
    if (rc != GF_CLI_OK)
        return rc;
    json_t *fns = stream ? json_array() : functions_json(gf_conn_nats(conn), function, wait_ms);
    json_t *streams = json_array(), *consumers = json_array();
    if (function && json_array_size(fns) == 0) {
        fprintf(stderr, "gamefn status: no instance of function '%s' answered $SRV.INFO.%s\n",
                function, function);
        rc = GF_CLI_NOT_FOUND;
    } else if (!function) {
        rc = jetstream_json(gf_conn_js(conn), stream, streams, consumers);
    }
    if (rc == GF_CLI_OK || rc == GF_CLI_REFUSED) {
        if (json)
            gf_cli_json_print(json_pack("{s:O, s:O, s:O}", "functions", fns, "streams", streams,
                                        "consumers", consumers),
                              false);
        else
            print_text(fns, streams, consumers);
    }
    json_decref(fns);
    json_decref(streams);
    json_decref(consumers);
    gf_conn_close(conn, 1000);
    return rc;
}
