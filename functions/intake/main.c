/*
 * intake — wires the ticket requests and queue discovery (intake.h) to their subjects.
 *
 * Design notes: ticket.create is served by `concurrency` handlers per instance, so
 * that many creates wait on their KV writes at once (one handler caps an instance near
 * half the synchronous KV write rate: each create is two writes). Until the runtime's
 * request endpoints take a concurrency option, that is `concurrency` endpoints on the
 * same subject and queue group (create-0, create-1, ...), each with its own delivery
 * thread; main() reads the option from the config file first, as gf_function_main will.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/function.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "intake.h"

static gf_err on_create(gf_fn *fn, const gf_msg *req, gf_reply *reply)
{
    return intake_create(gf_fn_state(fn), req, reply);
}

static gf_err on_cancel(gf_fn *fn, const gf_msg *req, gf_reply *reply)
{
    return intake_cancel(gf_fn_state(fn), req, reply);
}

static gf_err on_get(gf_fn *fn, const gf_msg *req, gf_reply *reply)
{
    return intake_get(gf_fn_state(fn), req, reply);
}

static gf_err on_queues(gf_fn *fn, const gf_msg *req, gf_reply *reply)
{
    return intake_queues(gf_fn_state(fn), req, reply);
}

static gf_err init(gf_fn *fn)
{
    char why[512] = "";
    intake_state *in = calloc(1, sizeof *in);
    if (!in)
        return GF_ERR_NOMEM;
    gf_err err = intake_state_init(in, gf_fn_config(fn), gf_fn_section(fn), gf_fn_nats(fn),
                                   gf_fn_js(fn), gf_fn_instance_id(fn), why, sizeof why);
    if (err != GF_OK) {
        gf_log_error("intake cannot start", "err=%s why=\"%s\"", gf_err_str(err), why);
        intake_state_free(in);
        free(in);
        return err;
    }
    gf_fn_set_state(fn, in);
    return GF_OK;
}

static void fini(gf_fn *fn)
{
    intake_state *in = gf_fn_state(fn);
    if (in) {
        intake_state_free(in);
        free(in);
    }
}

enum { MAX_CREATE = 64 };

/* create-0 .. create-<n-1>, then cancel, get and queues. */
static gf_endpoint endpoints[MAX_CREATE + 3];
static char create_names[MAX_CREATE][16];

static size_t build_endpoints(int64_t creates)
{
    size_t n = 0;
    for (int64_t i = 0; i < creates && i < MAX_CREATE; i++) {
        snprintf(create_names[i], sizeof create_names[i], "create-%lld", (long long)i);
        endpoints[n++] = (gf_endpoint){.name = create_names[i],
                                       .kind = GF_ENDPOINT_REQUEST,
                                       .request = {.subject = GF_WIRE_SUBJ_TICKET_CREATE,
                                                   .queue_group = GF_WIRE_QUEUE_INTAKE,
                                                   .on_request = on_create}};
    }
    endpoints[n++] = (gf_endpoint){.name = "cancel",
                                   .kind = GF_ENDPOINT_REQUEST,
                                   .request = {.subject = GF_WIRE_SUBJ_TICKET_CANCEL,
                                               .queue_group = GF_WIRE_QUEUE_INTAKE,
                                               .on_request = on_cancel}};
    endpoints[n++] = (gf_endpoint){.name = "get",
                                   .kind = GF_ENDPOINT_REQUEST,
                                   .request = {.subject = GF_WIRE_SUBJ_TICKET_GET,
                                               .queue_group = GF_WIRE_QUEUE_INTAKE,
                                               .on_request = on_get}};
    endpoints[n++] = (gf_endpoint){.name = "queues",
                                   .kind = GF_ENDPOINT_REQUEST,
                                   .request = {.subject = GF_WIRE_SUBJ_MATCHMAKING_QUEUES,
                                               .queue_group = GF_WIRE_QUEUE_INTAKE,
                                               .on_request = on_queues}};
    return n;
}

/* functions.intake.concurrency from the file gf_function_main will read (--config,
 * else $GAMEFN_CONFIG, else config/gamefn.yaml); the default when it cannot be read
 * (gf_function_main then reports the problem). */
static int64_t configured_concurrency(int argc, char **argv)
{
    const char *path = getenv("GAMEFN_CONFIG");
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--config") == 0)
            path = argv[i + 1];
    }
    const gf_config_section section = {.name = "intake", .table = &intake_config_table};
    gf_config *cfg = NULL;
    gf_config_error err;
    int64_t n = 32;
    if (gf_config_load(path && path[0] ? path : "config/gamefn.yaml", &section, &cfg, &err) ==
        GF_OK)
        n = ((const intake_config *)gf_config_function(cfg))->concurrency;
    gf_config_free(cfg);
    return n;
}

static const char *const buckets[] = {"tickets", "players", "matches", NULL};
static const char *const streams[] = {"AUDIT_TICKETS", "AUDIT_MATCHES", "AUDIT_PLAYERS", NULL};

static gf_function intake_function = {
    .name = "intake",
    .version = "0.1.0",
    .description = "Matchmaking tickets: create, cancel, get; queue discovery.",
    .config = &intake_config_table,
    .endpoints = endpoints,
    .buckets = buckets,
    .streams = streams,
    .init = init,
    .fini = fini,
};

int main(int argc, char **argv)
{
    intake_function.endpoints_len = build_endpoints(configured_concurrency(argc, argv));
    return gf_function_main(&intake_function, argc, argv);
}
