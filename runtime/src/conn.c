/*
 * conn.c — NATS connection from config (see gamefn/conn.h).
 *
 * Design notes:
 * - The first connection is made by our own loop rather than nats.c's
 *   RetryOnFailedConnect, so provisioning can run synchronously right after it
 *   and a SIGTERM while NATS is still away ends the process cleanly.
 * - Once connected, nats.c reconnects by itself forever (MaxReconnect -1); our
 *   custom delay callback gives it the same backoff + jitter as the first loop.
 * - Jitter comes from libsodium's randombytes_uniform so replicas that lost the
 *   same server do not reconnect in lockstep.
 */
#include "gamefn/conn.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/log.h"
#include "clock.h"
#include "nats_err.h"

struct gf_conn {
    natsConnection *nc;
    jsCtx *js;
    natsOptions *opts;
    const gf_nats_config *cfg; /* borrowed from the loaded config */
    atomic_llong reconnects;
    atomic_int closed;
    atomic_int closing; /* set by gf_conn_close: a disconnect then is expected */
};

int64_t gf_conn_backoff_ms(const gf_nats_config *cfg, int attempt, int64_t jitter_sample)
{
    int64_t delay = cfg->reconnect_wait_ms;
    for (int i = 1; i < attempt && delay < cfg->reconnect_max_wait_ms; i++)
        delay *= 2;
    if (delay > cfg->reconnect_max_wait_ms)
        delay = cfg->reconnect_max_wait_ms;
    if (jitter_sample < 0)
        jitter_sample = 0;
    if (jitter_sample > cfg->reconnect_jitter_ms)
        jitter_sample = cfg->reconnect_jitter_ms;
    return delay + jitter_sample;
}

static int64_t jittered_backoff_ms(const gf_nats_config *cfg, int attempt)
{
    int64_t jitter = 0;
    if (cfg->reconnect_jitter_ms > 0)
        jitter = (int64_t)randombytes_uniform((uint32_t)cfg->reconnect_jitter_ms + 1);
    return gf_conn_backoff_ms(cfg, attempt, jitter);
}

static int64_t on_reconnect_delay(natsConnection *nc, int attempts, void *closure)
{
    const gf_conn *c = closure;
    return jittered_backoff_ms(c->cfg, attempts);
}

static void on_disconnected(natsConnection *nc, void *closure)
{
    gf_conn *c = closure;
    if (!atomic_load(&c->closed) && !atomic_load(&c->closing))
        gf_log_warn("disconnected from NATS", "reconnecting=true");
}

static void on_reconnected(natsConnection *nc, void *closure)
{
    gf_conn *c = closure;
    char url[256] = "";
    atomic_fetch_add(&c->reconnects, 1);
    natsConnection_GetConnectedUrl(nc, url, sizeof url);
    gf_log_info("reconnected to NATS", "url=%s", url);
}

static void on_closed(natsConnection *nc, void *closure)
{
    gf_conn *c = closure;
    atomic_store(&c->closed, 1);
}

static void on_async_error(natsConnection *nc, natsSubscription *sub, natsStatus s, void *closure)
{
    char quoted[300];
    gf_log_error("NATS async error", "status=%d error=%s", (int)s,
                 gf_log_quote(quoted, sizeof quoted, natsStatus_GetText(s)));
}

static gf_err option_error(const char *what, natsStatus s)
{
    char quoted[300];
    gf_log_error("bad NATS option", "option=%s error=%s", what,
                 gf_log_quote(quoted, sizeof quoted, gf_nats_last_error(s)));
    return GF_ERR_CONFIG;
}

/* Builds the options; errors here are configuration errors (bad files, bad URLs). */
static gf_err build_options(gf_conn *c, const char *name)
{
    const gf_nats_config *cfg = c->cfg;
    natsOptions *o = NULL;
    natsStatus s = natsOptions_Create(&o);
    if (s != NATS_OK)
        return gf_nats_err(s);
    c->opts = o;

    s = natsOptions_SetServers(o, cfg->servers, (int)cfg->servers_len);
    if (s != NATS_OK)
        return option_error("servers", s);
    natsOptions_SetName(o, name);
    natsOptions_SetTimeout(o, cfg->connect_timeout_ms);
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, cfg->reconnect_wait_ms);
    natsOptions_SetCustomReconnectDelay(o, on_reconnect_delay, c);
    natsOptions_SetPingInterval(o, cfg->ping_interval_ms);
    natsOptions_SetReconnectBufSize(o, (int)cfg->reconnect_buffer);
    natsOptions_SetSendAsap(o, true);
    natsOptions_SetDisconnectedCB(o, on_disconnected, c);
    natsOptions_SetReconnectedCB(o, on_reconnected, c);
    natsOptions_SetClosedCB(o, on_closed, c);
    natsOptions_SetErrorHandler(o, on_async_error, c);

    if (cfg->credentials) {
        s = natsOptions_SetUserCredentialsFromFiles(o, cfg->credentials, NULL);
        if (s != NATS_OK)
            return option_error("credentials", s);
    }
    if (cfg->user) {
        s = natsOptions_SetUserInfo(o, cfg->user, cfg->password);
        if (s != NATS_OK)
            return option_error("user", s);
    }
    if (cfg->tls.enabled) {
        s = natsOptions_SetSecure(o, true);
        if (s == NATS_OK && cfg->tls.ca_file)
            s = natsOptions_LoadCATrustedCertificates(o, cfg->tls.ca_file);
        if (s == NATS_OK && cfg->tls.cert_file)
            s = natsOptions_LoadCertificatesChain(o, cfg->tls.cert_file, cfg->tls.key_file);
        if (s != NATS_OK)
            return option_error("tls", s);
    }
    return GF_OK;
}

/* Sleeps up to `ms` in small steps so a stop request is honoured promptly. */
static void sleep_unless_stopped(int64_t ms, const atomic_int *stop)
{
    int64_t end = gf_now_mono_ms() + ms;
    while (!(stop && atomic_load(stop)) && gf_now_mono_ms() < end)
        gf_sleep_ms(50);
}

gf_err gf_conn_open(const gf_nats_config *cfg, const char *name, const atomic_int *stop,
                    int64_t give_up_ms, gf_conn **out)
{
    gf_err err = GF_OK;
    gf_conn *c = NULL;
    *out = NULL;
    if (sodium_init() < 0)
        return GF_ERR_NATS;
    c = calloc(1, sizeof *c);
    if (!c)
        return GF_ERR_NOMEM;
    c->cfg = cfg;
    err = build_options(c, name);
    if (err != GF_OK)
        goto out;

    int64_t start = gf_now_mono_ms();
    for (int attempt = 1;; attempt++) {
        natsStatus s = natsConnection_Connect(&c->nc, c->opts);
        if (s == NATS_OK)
            break;
        char quoted[300];
        gf_log_warn("cannot reach NATS yet", "attempt=%d servers=%zu error=%s", attempt,
                    cfg->servers_len, gf_log_quote(quoted, sizeof quoted, gf_nats_last_error(s)));
        if (s == NATS_CONNECTION_AUTH_FAILED || s == NATS_SSL_ERROR) {
            err = GF_ERR_CONFIG;
            goto out;
        }
        if ((stop && atomic_load(stop)) ||
            (give_up_ms > 0 && gf_now_mono_ms() - start >= give_up_ms)) {
            err = GF_ERR_UNAVAILABLE;
            goto out;
        }
        sleep_unless_stopped(jittered_backoff_ms(cfg, attempt), stop);
        if (stop && atomic_load(stop)) {
            err = GF_ERR_UNAVAILABLE;
            goto out;
        }
    }

    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = cfg->api_timeout_ms;
    natsStatus s = natsConnection_JetStream(&c->js, c->nc, &jo);
    if (s != NATS_OK) {
        err = gf_nats_err(s);
        goto out;
    }
    char url[256] = "";
    natsConnection_GetConnectedUrl(c->nc, url, sizeof url);
    gf_log_info("connected to NATS", "url=%s name=%s", url, name);
    *out = c;
    c = NULL;
out:
    gf_conn_close(c, 0);
    return err;
}

natsConnection *gf_conn_nats(gf_conn *c)
{
    return c->nc;
}

jsCtx *gf_conn_js(gf_conn *c)
{
    return c->js;
}

int64_t gf_conn_reconnects(gf_conn *c)
{
    return atomic_load(&c->reconnects);
}

void gf_conn_close(gf_conn *c, int64_t timeout_ms)
{
    if (!c)
        return;
    atomic_store(&c->closing, 1);
    if (c->nc) {
        if (timeout_ms > 0 && natsConnection_Status(c->nc) == NATS_CONN_STATUS_CONNECTED) {
            /* Drain flushes pending publishes and acks, then closes. */
            if (natsConnection_DrainTimeout(c->nc, timeout_ms) == NATS_OK) {
                int64_t end = gf_now_mono_ms() + timeout_ms + 500;
                while (!atomic_load(&c->closed) && gf_now_mono_ms() < end)
                    gf_sleep_ms(10);
            }
        }
        natsConnection_Close(c->nc);
        /* The closed callback runs on a nats.c thread with `c` as closure: wait for it
         * before freeing `c` (bounded; it normally comes within milliseconds). */
        int64_t end = gf_now_mono_ms() + 2000;
        while (!atomic_load(&c->closed) && gf_now_mono_ms() < end)
            gf_sleep_ms(1);
    }
    jsCtx_Destroy(c->js);
    natsConnection_Destroy(c->nc);
    natsOptions_Destroy(c->opts);
    free(c);
}
