/* matcher — wires the matcher (matcher.h) to the runtime's lifecycle. */
#include <stdlib.h>

#include "gamefn/clock.h"
#include "gamefn/function.h"
#include "gamefn/log.h"
#include "matcher.h"

static gf_err init(gf_fn *fn)
{
    char why[512] = "";
    matcher *m = calloc(1, sizeof *m);
    if (!m)
        return GF_ERR_NOMEM;
    const gf_bucket_config *tickets = gf_config_bucket(gf_fn_config(fn), "tickets");
    gf_err err =
        matcher_start(m, gf_fn_section(fn), gf_fn_nats(fn), gf_fn_js(fn), gf_fn_instance_id(fn),
                      tickets ? tickets->ttl_ms : 0, why, sizeof why);
    if (err != GF_OK) {
        gf_log_error("matcher cannot start", "err=%s why=\"%s\"", gf_err_str(err), why);
        matcher_stop(m, gf_clock_mono_ms() + 1000);
        free(m);
        return err;
    }
    gf_fn_set_state(fn, m);
    return GF_OK;
}

static void fini(gf_fn *fn)
{
    matcher *m = gf_fn_state(fn);
    if (!m)
        return;
    matcher_stop(m, gf_clock_mono_ms() + gf_fn_config(fn)->runtime.drain_timeout_ms);
    free(m);
}

static const char *const buckets[] = {"tickets", "players", "matches", NULL};
static const char *const streams[] = {"MATCHES", NULL};

static const gf_function matcher_function = {
    .name = "matcher",
    .version = GAMEFN_RELEASE, /* the release: functions/CMakeLists.txt */
    .description = "Matches tickets on every tick of its tick groups; claims by compare-and-set.",
    .config = &gf_mm_config_table,
    .buckets = buckets,
    .streams = streams,
    .init = init,
    .fini = fini,
};

int main(int argc, char **argv)
{
    return gf_function_main(&matcher_function, argc, argv);
}
