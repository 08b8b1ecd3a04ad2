/*
 * gamefn/function.h — a function's lifecycle, serverless style.
 *
 * A function declares what it is and how it receives work (gamefn/endpoint.h); its
 * main() is one line:
 *
 *   static const gf_endpoint endpoints[] = {
 *       {.name = "echo", .kind = GF_ENDPOINT_REQUEST,
 *        .request = {.subject = "gamefn.v1.echo", .queue_group = "echo",
 *                    .on_request = echo_handle}},
 *   };
 *   static const gf_function echo = {.name = "echo", .version = "0.1.0",
 *       .endpoints = endpoints, .endpoints_len = 1};
 *   int main(int argc, char **argv) { return gf_function_main(&echo, argc, argv); }
 *
 * gf_function_main() then: parses flags (--config, --instance, --check-config,
 * --version, --help), loads the config (GAMEFN_CONFIG or config/gamefn.yaml) and runs
 * the function's check, connects (retrying until NATS is reachable), provisions the JetStream
 * assets the function needs, calls init, starts every endpoint and $SRV discovery, and waits. On
 * SIGTERM or SIGINT it stops taking new work, lets in-flight handlers finish and acks their
 * messages (a pull message fetched but not yet started is nak'd; a partitioned endpoint gives its
 * partitions back), drains the connection, calls fini and exits 0 — all within
 * runtime.drain_timeout (+ one fetch expiry for pull endpoints).
 *
 * Threads: see gamefn/endpoint.h for the handlers. init and fini run on the main
 * thread, which otherwise only waits for signals.
 */
#ifndef GAMEFN_FUNCTION_H
#define GAMEFN_FUNCTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/config.h"
#include "gamefn/endpoint.h"
#include "gamefn/err.h"

typedef struct gf_function {
    const char *name;    /* [A-Za-z0-9_-]+ */
    const char *version; /* semver */
    const char *description;
    const gf_cfg_table *config; /* functions.<name> section, or NULL */
    const gf_endpoint *endpoints;
    size_t endpoints_len;
    /* JetStream assets to provision before starting (names in config), NULL-terminated
     * lists or NULL. What an endpoint needs itself (the stream and consumer of a pull
     * endpoint, the lease bucket of a tick endpoint) is provisioned automatically. */
    const char *const *streams;
    const char *const *buckets;
    /* What the section's table cannot check: the files it names (keys), its agreement
     * with other sections. Run by --check-config and at start before connecting; a
     * failure is a config error (exit 2, `why` printed). Reads only; may be NULL. */
    gf_err (*check)(const gf_config *cfg, const void *section, char *why, size_t why_size);
    gf_err (*init)(gf_fn *fn); /* after provisioning, before endpoints start; may be NULL */
    void (*fini)(gf_fn *fn);   /* after endpoints stopped; may be NULL */
} gf_function;

/* Runs the function; returns the process exit code (0 after a clean stop,
 * 2 for usage or config errors, 1 for other failures). */
int gf_function_main(const gf_function *def, int argc, char **argv);

/* ---- for handlers, init and fini ---------------------------------------- */
const gf_config *gf_fn_config(const gf_fn *fn);
const void *gf_fn_section(const gf_fn *fn); /* the parsed functions.<name> struct */
const char *gf_fn_instance_id(const gf_fn *fn);
natsConnection *gf_fn_nats(gf_fn *fn);
jsCtx *gf_fn_js(gf_fn *fn);
void gf_fn_set_state(gf_fn *fn, void *state); /* function-owned state, freed by fini */
void *gf_fn_state(const gf_fn *fn);
bool gf_fn_stopping(const gf_fn *fn); /* true once SIGTERM/SIGINT arrived */

#endif
