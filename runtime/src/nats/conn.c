/*
 * conn.c — NATS connection from config (see gamefn/conn.h).
 *
 * Design notes:
 * - The first connection is made by our own loop rather than nats.c's
 *   RetryOnFailedConnect, so provisioning can run synchronously right after it
 *   and a SIGTERM while NATS is still away ends the process cleanly.
 * - Once connected, nats.c reconnects by itself forever (MaxReconnect -1); our
 *   custom delay callback gives it the same backoff + jitter as the first loop.
 * - Both use gf_backoff_ms() with the nats.reconnect_* settings; its jitter keeps
 *   replicas that lost the same server from reconnecting in lockstep.
 */
#include "gamefn/conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gamefn/backoff.h"
#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "nats_err.h"
#include "nkey.h"

struct gf_conn {
    natsConnection *nc;
    jsCtx *js;
    natsOptions *opts;
    const gf_nats_config *cfg; /* borrowed from the loaded config */
    atomic_llong reconnects;
    atomic_int closed;
    atomic_int closing; /* set by gf_conn_close: a disconnect then is expected */
};

/* The delay before reconnect attempt `attempt` (1-based), jittered. */
static int64_t reconnect_delay_ms(const gf_nats_config *cfg, int attempt)
{
    return gf_backoff_ms(attempt, cfg->reconnect_wait_ms, cfg->reconnect_max_wait_ms,
                         cfg->reconnect_jitter_ms);
}

static int64_t on_reconnect_delay(natsConnection *nc, int attempts, void *closure)
{
    const gf_conn *c = closure;
    return reconnect_delay_ms(c->cfg, attempts);
}

static void on_disconnected(natsConnection *nc, void *closure)
{
    gf_conn *c = closure;
    if (!atomic_load(&c->closed) && !atomic_load(&c->closing))
        gf_log_warn("disconnected from NATS", "reconnecting=true");
}

/* The connected server's URL without its user info, which may be a user and
 * password or a token: the part before '@' is logged as three asterisks. */
static char *connected_url_for_log(natsConnection *nc, char *out, size_t size)
{
    char url[512] = "";
    natsConnection_GetConnectedUrl(nc, url, sizeof url);
    char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    char *at = strrchr(host, '@');
    if (at)
        snprintf(out, size, "%.*s***%s", (int)(host - url), url, at);
    else
        snprintf(out, size, "%s", url);
    return out;
}

static void on_reconnected(natsConnection *nc, void *closure)
{
    gf_conn *c = closure;
    char url[512];
    atomic_fetch_add(&c->reconnects, 1);
    gf_log_info("reconnected to NATS", "url=%s", connected_url_for_log(nc, url, sizeof url));
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
                 gf_log_quote(quoted, sizeof quoted, gf__nats_last_error(s)));
    return GF_ERR_CONFIG;
}

/* A seed or .creds file other users can read (or change) still works, but anyone on
 * the host can then act as this function: warn, once per start. */
static void warn_if_exposed(const char *path, const char *option)
{
    struct stat st;
    if (stat(path, &st) != 0 || (st.st_mode & (S_IRWXG | S_IRWXO)) == 0)
        return;
    char qpath[300];
    gf_log_warn("secret file is accessible to other users",
                "option=%s path=%s mode=%04o "
                "hint=\"chmod 600 it (owner only)\"",
                option, gf_log_quote(qpath, sizeof qpath, path), (unsigned)(st.st_mode & 07777));
}

/* Builds the options; errors here are configuration errors (bad files, bad URLs). */
static gf_err build_options(gf_conn *c, const char *name, bool batched)
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
    natsOptions_SetSendAsap(o, !batched);
    natsOptions_SetDisconnectedCB(o, on_disconnected, c);
    natsOptions_SetReconnectedCB(o, on_reconnected, c);
    natsOptions_SetClosedCB(o, on_closed, c);
    natsOptions_SetErrorHandler(o, on_async_error, c);
    if (cfg->inbox_prefix) {
        s = natsOptions_SetCustomInboxPrefix(o, cfg->inbox_prefix);
        if (s != NATS_OK)
            return option_error("inbox_prefix", s);
    }

    if (cfg->credentials) {
        /* nats.c opens the file only when it connects, and a missing one would then
         * look like an unreachable server, retried forever: check it now. */
        FILE *f = fopen(cfg->credentials, "r");
        if (!f) {
            char qpath[300], qwhy[300];
            gf_log_error("cannot read credentials file", "path=%s error=%s",
                         gf_log_quote(qpath, sizeof qpath, cfg->credentials),
                         gf_log_quote(qwhy, sizeof qwhy, strerror(errno)));
            return GF_ERR_CONFIG;
        }
        fclose(f);
        warn_if_exposed(cfg->credentials, "nats.credentials");
        s = natsOptions_SetUserCredentialsFromFiles(o, cfg->credentials, NULL);
        if (s != NATS_OK)
            return option_error("credentials", s);
    }
    if (cfg->nkey_seed) {
        /* nats.c wants the public key next to the seed file; derive it here, which
         * also refuses at start a file it could not sign with at connect time. */
        char pub[GF__NKEY_PUBLIC_LEN + 1], why[256], qpath[300], qwhy[300];
        gf_err err = gf__nkey_seed_file_public(cfg->nkey_seed, pub, why, sizeof why);
        if (err != GF_OK) {
            const char *text = err == GF_ERR_CONFIG ? why : gf_err_str(err);
            gf_log_error("bad nkey seed file", "path=%s error=%s",
                         gf_log_quote(qpath, sizeof qpath, cfg->nkey_seed),
                         gf_log_quote(qwhy, sizeof qwhy, text));
            return err;
        }
        warn_if_exposed(cfg->nkey_seed, "nats.nkey_seed");
        gf_log_debug("authenticating with an nkey", "public_key=%s", pub);
        s = natsOptions_SetNKeyFromSeed(o, pub, cfg->nkey_seed);
        if (s != NATS_OK)
            return option_error("nkey_seed", s);
    }
    if (cfg->user) {
        s = natsOptions_SetUserInfo(o, cfg->user, cfg->password);
        if (s != NATS_OK)
            return option_error("user", s);
    }
    /* nats.c switches to TLS by itself when a server requires it (or the URL says
     * tls://), so the CA and client certificate are loaded whenever configured. */
    if (cfg->tls.enabled || cfg->tls.ca_file || cfg->tls.cert_file) {
        s = cfg->tls.enabled ? natsOptions_SetSecure(o, true) : NATS_OK;
        if (s == NATS_OK && cfg->tls.ca_file)
            s = natsOptions_LoadCATrustedCertificates(o, cfg->tls.ca_file);
        if (s == NATS_OK && cfg->tls.cert_file)
            s = natsOptions_LoadCertificatesChain(o, cfg->tls.cert_file, cfg->tls.key_file);
        if (s != NATS_OK)
            return option_error("tls", s);
    }
    return GF_OK;
}

/* Non-NULL (what to check) when a failed connect is a refusal that retrying cannot
 * fix: wrong credentials, a certificate that does not verify, TLS wanted but not
 * offered. A TLS 1.3 server that wants a client certificate we did not send (or
 * does not trust) closes the connection just after the handshake, which nats.c
 * reports as a protocol error (it sent INFO, then nothing came where PONG was
 * due) or, when the close wins the race, as an I/O error writing CONNECT. A
 * server that is away refuses or resets the TCP connection, and a proxy with no
 * server behind it closes before INFO (NATS_CONNECTION_CLOSED): neither gives a
 * protocol error. So `dropped` counts protocol errors, I/O errors leave it as it
 * is (a reset before INFO is one too), anything else clears it, and a few protocol
 * errors without another kind of failure in between are a refusal.
 *
 * A login that signs the server's nonce (nats.nkey_seed, nats.credentials) is refused
 * once in 256 attempts for no fault of its own: nats.c 3.4.1 base64-encodes the
 * signature with a function that returns nothing when the first byte is 0, so that
 * CONNECT carries no "sig" and the server answers "Authorization Violation" (its log:
 * "Signature missing"; measured 1 in 500 and 4 in 1,500 connects with a valid seed).
 * So a signed login is a refusal only after `auth_failed` such answers in a row. */
static const char *refusal_hint(const gf_nats_config *cfg, natsStatus s, int dropped,
                                int auth_failed)
{
    enum { DROPS_MEAN_REFUSED = 3, SIGNED_REFUSALS_MEAN_REFUSED = 3 };
    bool signs = (cfg->nkey_seed && cfg->nkey_seed[0]) || (cfg->credentials && cfg->credentials[0]);
    switch (s) {
    case NATS_CONNECTION_AUTH_FAILED:
        if (signs && auth_failed < SIGNED_REFUSALS_MEAN_REFUSED)
            return NULL;
        return "check nats.user and nats.password, nats.nkey_seed or nats.credentials";
    case NATS_SSL_ERROR:
        return "check nats.tls (ca_file, cert_file, key_file) and the server's certificate";
    case NATS_SECURE_CONNECTION_WANTED:
        return "nats.tls.enabled is set but the server does not offer TLS";
    case NATS_PROTOCOL_ERROR:
        if (dropped < DROPS_MEAN_REFUSED)
            return NULL;
        return cfg->tls.cert_file ? "the server closes every connection after the TLS handshake: "
                                    "does it trust nats.tls.cert_file's CA?"
                                  : "the server closes every connection after it opens: it may "
                                    "require a client certificate (nats.tls.cert_file)";
    default:
        return NULL;
    }
}

gf_err gf_conn_open(const gf_nats_config *cfg, const char *name, const atomic_int *stop,
                    int64_t give_up_ms, gf_conn **out)
{
    return gf_conn_open_batched(cfg, name, cfg->flush == GF_NATS_FLUSH_BATCHED, stop, give_up_ms,
                                out);
}

gf_err gf_conn_open_batched(const gf_nats_config *cfg, const char *name, bool batched,
                            const atomic_int *stop, int64_t give_up_ms, gf_conn **out)
{
    gf_err err = GF_OK;
    gf_conn *c = NULL;
    *out = NULL;
    c = calloc(1, sizeof *c);
    if (!c)
        return GF_ERR_NOMEM;
    c->cfg = cfg;
    err = build_options(c, name, batched);
    if (err != GF_OK)
        goto out;

    int64_t start = gf_clock_mono_ms();
    int dropped = 0;     /* attempts the server closed after INFO; see refusal_hint() */
    int auth_failed = 0; /* logins refused in a row; idem */
    for (int attempt = 1;; attempt++) {
        natsStatus s = natsConnection_Connect(&c->nc, c->opts);
        if (s == NATS_OK)
            break;
        char quoted[300];
        if (s == NATS_PROTOCOL_ERROR)
            dropped++;
        else if (s != NATS_IO_ERROR)
            dropped = 0;
        auth_failed = s == NATS_CONNECTION_AUTH_FAILED ? auth_failed + 1 : 0;
        const char *hint = refusal_hint(cfg, s, dropped, auth_failed);
        if (hint) {
            gf_log_error("NATS refused the connection", "attempt=%d error=%s hint=\"%s\"", attempt,
                         gf_log_quote(quoted, sizeof quoted, gf__nats_last_error(s)), hint);
            err = GF_ERR_CONFIG;
            goto out;
        }
        gf_log_warn("cannot reach NATS yet", "attempt=%d servers=%zu error=%s", attempt,
                    cfg->servers_len, gf_log_quote(quoted, sizeof quoted, gf__nats_last_error(s)));
        if ((stop && atomic_load(stop)) ||
            (give_up_ms > 0 && gf_clock_mono_ms() - start >= give_up_ms)) {
            err = GF_ERR_UNAVAILABLE;
            goto out;
        }
        gf_clock_sleep_until(gf_clock_mono_ms() + reconnect_delay_ms(cfg, attempt), stop);
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
    char url[512];
    gf_log_info("connected to NATS", "url=%s name=%s",
                connected_url_for_log(c->nc, url, sizeof url), name);
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

bool gf_sub_close(natsSubscription *sub, int64_t timeout_ms)
{
    if (!sub)
        return true;
    if (timeout_ms < 1)
        timeout_ms = 1;
    bool drained = natsSubscription_DrainTimeout(sub, timeout_ms) == NATS_OK &&
                   natsSubscription_WaitForDrainCompletion(sub, timeout_ms) == NATS_OK;
    natsSubscription_Destroy(sub);
    return drained;
}

bool gf_sub_unsubscribed_passed(natsConnection *nc, int64_t timeout_ms)
{
    enum { RETRY_MS = 20 };
    int64_t until = gf_clock_mono_ms() + timeout_ms;
    for (;;) {
        natsConnStatus cs = natsConnection_Status(nc);
        if (cs != NATS_CONN_STATUS_CONNECTED && cs != NATS_CONN_STATUS_DRAINING_SUBS &&
            cs != NATS_CONN_STATUS_DRAINING_PUBS)
            return true;
        int64_t left = until - gf_clock_mono_ms();
        if (left <= 0)
            return false;
        if (natsConnection_FlushTimeout(nc, left) == NATS_OK)
            return true;
        gf_clock_sleep_ms(left < RETRY_MS ? left : RETRY_MS);
    }
}

void gf_sub_forget(natsConnection *nc, natsSubscription *sub, int64_t timeout_ms)
{
    if (!sub)
        return;
    natsSubscription_Unsubscribe(sub);
    if (gf_sub_unsubscribed_passed(nc, timeout_ms))
        natsSubscription_Destroy(sub);
    else
        gf_log_error("no flush answered after unsubscribing; leaking the subscription "
                     "nats.c's read loop may still use",
                     "subject=%s", natsSubscription_GetSubject(sub));
}

void gf_kv_watcher_forget(natsConnection *nc, kvWatcher *w, int64_t timeout_ms)
{
    if (!w)
        return;
    kvWatcher_Stop(w); /* unsubscribes */
    if (gf_sub_unsubscribed_passed(nc, timeout_ms))
        kvWatcher_Destroy(w);
    else
        gf_log_error("no flush answered after stopping a KV watcher; leaking it (nats.c's "
                     "read loop may still use its subscription)",
                     NULL);
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
                int64_t end = gf_clock_mono_ms() + timeout_ms + 500;
                while (!atomic_load(&c->closed) && gf_clock_mono_ms() < end)
                    gf_clock_sleep_ms(10);
            }
        }
        natsConnection_Close(c->nc);
        /* The closed callback runs on a nats.c thread with `c` as closure: wait for it
         * before freeing `c` (bounded; it normally comes within milliseconds). */
        int64_t end = gf_clock_mono_ms() + 2000;
        while (!atomic_load(&c->closed) && gf_clock_mono_ms() < end)
            gf_clock_sleep_ms(1);
    }
    jsCtx_Destroy(c->js);
    natsConnection_Destroy(c->nc);
    natsOptions_Destroy(c->opts);
    free(c);
}
