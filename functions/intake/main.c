/*
 * intake — wires the ticket requests and queue discovery (intake.h) to their subjects.
 *
 * Design notes: ticket.create is served by functions.intake.concurrency handlers per
 * instance (the runtime's request concurrency, `.concurrency_of`), so that many creates
 * wait on their KV writes at once (one handler caps an instance near half the
 * synchronous KV write rate: each create is two writes). cancel and get run 4 handlers
 * each (each waits on KV reads and writes too); discovery answers from memory.
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
    gf_test_pause_arm(&in->pause, "GAMEFN_TEST_INTAKE_PAUSE");
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

/* functions.intake.concurrency: ticket.create handlers of this instance. */
static int create_concurrency(gf_fn *fn)
{
    return (int)((const intake_config *)gf_fn_section(fn))->concurrency;
}

static const gf_endpoint endpoints[] = {
    {.name = "create",
     .kind = GF_ENDPOINT_REQUEST,
     .request = {.subject = GF_WIRE_SUBJ_TICKET_CREATE,
                 .queue_group = GF_WIRE_QUEUE_INTAKE,
                 .on_request = on_create,
                 .concurrency_of = create_concurrency}},
    {.name = "cancel",
     .kind = GF_ENDPOINT_REQUEST,
     .request = {.subject = GF_WIRE_SUBJ_TICKET_CANCEL,
                 .queue_group = GF_WIRE_QUEUE_INTAKE,
                 .on_request = on_cancel,
                 .concurrency = 4}},
    {.name = "get",
     .kind = GF_ENDPOINT_REQUEST,
     .request = {.subject = GF_WIRE_SUBJ_TICKET_GET,
                 .queue_group = GF_WIRE_QUEUE_INTAKE,
                 .on_request = on_get,
                 .concurrency = 4}},
    {.name = "queues",
     .kind = GF_ENDPOINT_REQUEST,
     .request = {.subject = GF_WIRE_SUBJ_MATCHMAKING_QUEUES,
                 .queue_group = GF_WIRE_QUEUE_INTAKE,
                 .on_request = on_queues}},
};

static const char *const buckets[] = {"tickets", "players", "matches", NULL};
static const char *const streams[] = {"AUDIT_TICKETS", "AUDIT_MATCHES", "AUDIT_PLAYERS", NULL};

static const gf_function intake_function = {
    .name = "intake",
    .version = GAMEFN_RELEASE, /* the release: functions/CMakeLists.txt */
    .description = "Matchmaking tickets: create, cancel, get; queue discovery.",
    .config = &intake_config_table,
    .endpoints = endpoints,
    .endpoints_len = sizeof endpoints / sizeof endpoints[0],
    .buckets = buckets,
    .streams = streams,
    .init = init,
    .fini = fini,
};

int main(int argc, char **argv)
{
    return gf_function_main(&intake_function, argc, argv);
}
