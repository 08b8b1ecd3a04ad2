/* echo — wires echo_answer() to gamefn.v1.echo. */
#include "echo.h"
#include "gamefn/clock.h"
#include "gamefn/function.h"

static gf_err on_echo(gf_fn *fn, const gf_msg *req, gf_reply *reply)
{
    const echo_config *cfg = gf_fn_section(fn);
    gf_clock_sleep_ms(cfg->delay_ms);
    uint8_t *out = NULL;
    size_t len = 0;
    gf_err err =
        echo_answer(cfg, req->data, req->len, &out, &len, reply->error, sizeof reply->error);
    reply->data = out;
    reply->len = len;
    return err;
}

static const gf_endpoint endpoints[] = {
    {.name = "echo",
     .kind = GF_ENDPOINT_REQUEST,
     .request = {.subject = "gamefn.v1.echo", .queue_group = "echo", .on_request = on_echo}},
};

static const gf_function echo_function = {
    .name = "echo",
    .version = GAMEFN_RELEASE, /* the release: functions/CMakeLists.txt */
    .description = "Answers gamefn.v1.echo with the request payload (the smallest function).",
    .config = &echo_config_table,
    .endpoints = endpoints,
    .endpoints_len = sizeof endpoints / sizeof endpoints[0],
};

int main(int argc, char **argv)
{
    return gf_function_main(&echo_function, argc, argv);
}
