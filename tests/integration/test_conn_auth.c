/*
 * test_conn_auth.c — gf_conn_open() against real nats-servers that demand
 * authentication or TLS: user/password, nkey seed files, mutual TLS with
 * certificates made at test time, and .creds files under an operator.
 *
 * Each case checks three things: the right credentials connect (and the server's
 * /connz says how the client authenticated), wrong ones fail with GF_ERR_CONFIG
 * after exactly one attempt (gf_conn_open is called with no give-up time, so a
 * retry loop would hang the test until its timeout), and no secret (password,
 * seed) appears in any log line the runtime wrote meanwhile.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <nats/nats.h>
#include <sodium.h>

#include "auth_util.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"
#include "harness_util.h"
#include "natsd.h"

/* SIGNED_TRIES: a login that signs the nonce (nkey, .creds) is judged refused after 3
 * refusals in a row (conn.c: nats.c 3.4.1 drops the signature once in 256 logins). */
enum { EXTRA_MAX = 8192, DROPPED_MAX = 40, SIGNED_TRIES = 3, MANY_LOGINS = 1000 };

typedef struct attempt {
    gf_err err;
    int tries;       /* "cannot reach NATS yet" + "NATS refused the connection" lines */
    const char *log; /* static: valid until the next attempt */
} attempt;

static gf_nats_config config_for(const char **servers)
{
    gf_nats_config cfg = {
        .servers = servers,
        .servers_len = 1,
        .connect_timeout_ms = 2000,
        .reconnect_wait_ms = 100,
        .reconnect_jitter_ms = 50,
        .reconnect_max_wait_ms = 500,
        .ping_interval_ms = 60000,
        .reconnect_buffer = 1 << 20,
        .api_timeout_ms = 2000,
    };
    return cfg;
}

static gf_natsd *start_server(const char *extra)
{
    gf_natsd_opts opts = {.no_jetstream = true, .extra_config = extra};
    gf_natsd *s = NULL;
    assert_int_equal(gf_natsd_start(&opts, &s), 0);
    return s;
}

/* One gf_conn_open with the log captured; on success checks the connection
 * works and returns the server's /connz entry for it (caller json_decref()s). */
static attempt try_open(const gf_nats_config *cfg, int64_t give_up_ms, gf_natsd *server,
                        json_t **connz)
{
    attempt a = {0};
    gf_conn *c = NULL;
    au_capture_begin();
    a.err = gf_conn_open(cfg, "auth-test", NULL, give_up_ms, &c);
    natsStatus flushed = c ? natsConnection_FlushTimeout(gf_conn_nats(c), 2000) : NATS_OK;
    json_t *body = NULL;
    int monitored = c && server ? gf_natsd_monitor_json(server, "/connz?auth=true", &body) : 0;
    gf_conn_close(c, 0);
    a.log = au_capture_end();
    a.tries = au_count_lines(a.log, "cannot reach NATS yet") +
              au_count_lines(a.log, "NATS refused the connection");

    if (a.err == GF_OK) {
        assert_int_equal(flushed, NATS_OK);
        assert_int_equal(monitored, 0);
    }
    if (connz && body) {
        json_t *conns = json_object_get(body, "connections");
        size_t i;
        json_t *conn;
        json_array_foreach(conns, i, conn)
        {
            const char *name = json_string_value(json_object_get(conn, "name"));
            if (name && strcmp(name, "auth-test") == 0)
                *connz = json_incref(conn);
        }
        assert_non_null(*connz);
    }
    json_decref(body);
    return a;
}

/* The server said no: GF_ERR_CONFIG after at most `max_tries` attempts: 1 when the
 * server answers with an error. When a TLS 1.3 server just closes the connection
 * after the handshake, conn.c waits for 3 protocol errors; an attempt ends in one
 * with a probability of about 0.4 here, else in an I/O error, which does not count
 * (10 runs needed 3 to 14 attempts), so DROPPED_MAX attempts leave a chance of
 * about 1e-7 of a false failure. */
static void expect_refused(attempt a, const char *what, int max_tries)
{
    if (a.err != GF_ERR_CONFIG)
        fail_msg("%s: expected GF_ERR_CONFIG, got %s", what, gf_err_str(a.err), 1);
    if (a.tries < 1 || a.tries > max_tries)
        fail_msg("%s: expected 1 to %d connection attempts, saw %d", what, max_tries, a.tries);
    if (au_count_lines(a.log, "NATS refused the connection") != 1)
        fail_msg("%s: no 'NATS refused the connection' line", what);
}

static const char *field(json_t *conn, const char *key)
{
    const char *v = json_string_value(json_object_get(conn, key));
    return v ? v : "";
}

/* ---- user and password ------------------------------------------------------ */

static void user_password(void **state)
{
    (void)state;
    unsigned char rnd[16];
    char password[33], wrong[40], extra[EXTRA_MAX], url[256];
    randombytes_buf(rnd, sizeof rnd);
    sodium_bin2hex(password, sizeof password, rnd, sizeof rnd);
    snprintf(wrong, sizeof wrong, "x%s", password);
    snprintf(extra, sizeof extra,
             "authorization {\n  users = [ {user: \"gamefn\", password: \"%s\"} ]\n}\n", password);
    gf_natsd *server = start_server(extra);
    const char *servers[] = {gf_natsd_url(server)};
    gf_nats_config cfg = config_for(servers);

    json_t *conn = NULL;
    cfg.user = "gamefn";
    cfg.password = password;
    attempt a = try_open(&cfg, 0, server, &conn);
    assert_int_equal(a.err, GF_OK);
    assert_string_equal(field(conn, "authorized_user"), "gamefn");
    json_decref(conn);
    au_assert_no_secret(a.log, password);

    cfg.password = wrong;
    a = try_open(&cfg, 0, server, NULL);
    expect_refused(a, "wrong password", 1);
    au_assert_no_secret(a.log, wrong);

    cfg.user = NULL;
    cfg.password = NULL;
    expect_refused(try_open(&cfg, 0, server, NULL), "no credentials", 1);

    /* Credentials inside the URL: they work, and the logged URL hides them. */
    snprintf(url, sizeof url, "nats://gamefn:%s@127.0.0.1:%d", password, gf_natsd_port(server));
    servers[0] = url;
    a = try_open(&cfg, 0, server, NULL);
    assert_int_equal(a.err, GF_OK);
    assert_int_equal(au_count_lines(a.log, "connected to NATS"), 1);
    au_assert_no_secret(a.log, password);

    /* ... and so do the retries' lines when the server is away. */
    assert_int_equal(gf_natsd_stop(server), 0);
    a = try_open(&cfg, 400, NULL, NULL);
    assert_int_equal(a.err, GF_ERR_UNAVAILABLE);
    assert_true(a.tries >= 1);
    au_assert_no_secret(a.log, password);
    gf_natsd_free(server);
}

/* ---- nkey seed files --------------------------------------------------------------- */

static void nkey_seed(void **state)
{
    (void)state;
    au_key user, other;
    char extra[EXTRA_MAX], text[256], path[512];
    au_key_new(&user, GF__NKEY_USER);
    au_key_new(&other, GF__NKEY_USER);
    snprintf(extra, sizeof extra, "authorization {\n  users = [ {nkey: \"%s\"} ]\n}\n", user.pub);
    gf_natsd *server = start_server(extra);
    const char *servers[] = {gf_natsd_url(server)};
    gf_nats_config cfg = config_for(servers);

    /* The seed alone, as `nk -gen user` writes it. */
    snprintf(text, sizeof text, "%s\n", user.seed);
    snprintf(path, sizeof path, "%s", au_write("user.nk", text));
    cfg.nkey_seed = path;
    json_t *conn = NULL;
    attempt a = try_open(&cfg, 0, server, &conn);
    assert_int_equal(a.err, GF_OK);
    assert_string_equal(field(conn, "authorized_user"), user.pub);
    json_decref(conn);
    au_assert_no_secret(a.log, user.seed);
    assert_int_equal(au_count_lines(a.log, "secret file is accessible to other users"), 0);

    /* It logs in every time: nats.c 3.4.1 sends no signature when its first byte is 0
     * (once in 256 logins), which the server refuses; conn.c tries again. Without that,
     * MANY_LOGINS logins fail at least once with a probability of 98 %. */
    for (int i = 0; i < MANY_LOGINS; i++) {
        gf_conn *c = NULL;
        gf_err err = gf_conn_open(&cfg, "auth-many", NULL, 10000, &c);
        if (err != GF_OK)
            fail_msg("login %d of %d with a valid seed: %s", i + 1, MANY_LOGINS, gf_err_str(err));
        gf_conn_close(c, 0);
    }

    /* Readable by every local user: it still works, with a warning. */
    assert_int_equal(chmod(path, 0644), 0);
    a = try_open(&cfg, 0, server, NULL);
    assert_int_equal(a.err, GF_OK);
    assert_int_equal(au_count_lines(a.log, "secret file is accessible to other users"), 1);
    assert_int_equal(au_count_lines(a.log, "mode=0644"), 1);
    au_assert_no_secret(a.log, user.seed);

    /* A decorated block, as nsc writes it. */
    snprintf(text, sizeof text,
             "-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n", user.seed);
    snprintf(path, sizeof path, "%s", au_write("user-block.nk", text));
    a = try_open(&cfg, 0, server, NULL);
    assert_int_equal(a.err, GF_OK);
    au_assert_no_secret(a.log, user.seed);

    /* Another user's seed: the server refuses it. */
    snprintf(text, sizeof text, "%s\n", other.seed);
    snprintf(path, sizeof path, "%s", au_write("other.nk", text));
    a = try_open(&cfg, 0, server, NULL);
    expect_refused(a, "unknown nkey", SIGNED_TRIES);
    au_assert_no_secret(a.log, other.seed);

    /* A file nats.c could not sign with: refused before any attempt. */
    snprintf(text, sizeof text, "%s\r\n", user.seed);
    snprintf(path, sizeof path, "%s", au_write("crlf.nk", text));
    a = try_open(&cfg, 0, server, NULL);
    assert_int_equal(a.err, GF_ERR_CONFIG);
    assert_int_equal(a.tries, 0);
    assert_int_equal(au_count_lines(a.log, "bad nkey seed file"), 1);
    assert_int_equal(au_count_lines(a.log, "CR characters"), 1);
    au_assert_no_secret(a.log, user.seed);

    snprintf(path, sizeof path, "%s", au_path("missing.nk"));
    a = try_open(&cfg, 0, server, NULL);
    assert_int_equal(a.err, GF_ERR_CONFIG);
    assert_int_equal(a.tries, 0);
    gf_natsd_free(server);
}

/* ---- TLS ---------------------------------------------------------------------------- */

static void mutual_tls(void **state)
{
    (void)state;
    if (!au_have_openssl())
        fail_msg("no openssl program on PATH (scripts/install-deps.sh installs it)");
    au_make_ca("ca");
    au_make_cert("server", "ca", "IP:127.0.0.1, DNS:localhost");
    au_make_cert("client", "ca", NULL);
    au_make_ca("other-ca");
    au_make_cert("other-client", "other-ca", NULL);
    au_make_cert("elsewhere", "ca", "DNS:elsewhere.example");
    char ca[512], cert[512], key[512], other_ca[512], other_cert[512], other_key[512];
    snprintf(ca, sizeof ca, "%s", au_path("ca.pem"));
    snprintf(cert, sizeof cert, "%s", au_path("client.pem"));
    snprintf(key, sizeof key, "%s", au_path("client.key"));
    snprintf(other_ca, sizeof other_ca, "%s", au_path("other-ca.pem"));
    snprintf(other_cert, sizeof other_cert, "%s", au_path("other-client.pem"));
    snprintf(other_key, sizeof other_key, "%s", au_path("other-client.key"));

    char extra[EXTRA_MAX], tls_url[256];
    snprintf(extra, sizeof extra,
             "tls {\n  cert_file: \"%s/server.pem\"\n  key_file: \"%s/server.key\"\n"
             "  ca_file: \"%s\"\n  verify: true\n  timeout: 2\n}\n",
             au_dir, au_dir, ca);
    gf_natsd *server = start_server(extra);
    const char *servers[] = {gf_natsd_url(server)};
    gf_nats_config cfg = config_for(servers);

    json_t *conn = NULL;
    cfg.tls = (gf_tls_config){true, ca, cert, key};
    attempt a = try_open(&cfg, 0, server, &conn);
    assert_int_equal(a.err, GF_OK);
    assert_true(strlen(field(conn, "tls_version")) > 0);
    json_decref(conn);

    cfg.tls = (gf_tls_config){true, ca, NULL, NULL};
    expect_refused(try_open(&cfg, 0, server, NULL), "no client certificate", DROPPED_MAX);

    cfg.tls = (gf_tls_config){true, other_ca, cert, key};
    expect_refused(try_open(&cfg, 0, server, NULL), "server certificate from an untrusted CA", 1);

    cfg.tls = (gf_tls_config){true, ca, other_cert, other_key};
    expect_refused(try_open(&cfg, 0, server, NULL), "client certificate from another CA",
                   DROPPED_MAX);

    /* A tls:// URL asks for TLS by itself; the configured files must still be used. */
    snprintf(tls_url, sizeof tls_url, "tls://127.0.0.1:%d", gf_natsd_port(server));
    servers[0] = tls_url;
    cfg.tls = (gf_tls_config){false, ca, cert, key};
    assert_int_equal(try_open(&cfg, 0, server, NULL).err, GF_OK);
    servers[0] = gf_natsd_url(server);

    /* A CA file that does not exist is a configuration error before any attempt. */
    cfg.tls = (gf_tls_config){true, au_path("nonexistent.pem"), cert, key};
    a = try_open(&cfg, 0, server, NULL);
    assert_int_equal(a.err, GF_ERR_CONFIG);
    assert_int_equal(a.tries, 0);
    gf_natsd_free(server);

    /* A certificate from the trusted CA, but for another host: Debian's nats.c
     * verifies the host name (or IP) of the URL against the certificate. */
    snprintf(extra, sizeof extra,
             "tls {\n  cert_file: \"%s/elsewhere.pem\"\n  key_file: \"%s/elsewhere.key\"\n}\n",
             au_dir, au_dir);
    server = start_server(extra);
    servers[0] = gf_natsd_url(server);
    cfg.tls = (gf_tls_config){true, ca, NULL, NULL};
    a = try_open(&cfg, 0, server, NULL);
    expect_refused(a, "server certificate for another host", 1);
    assert_int_equal(au_count_lines(a.log, "IP address mismatch"), 1);
    gf_natsd_free(server);

    /* TLS required by the client, not offered by the server. */
    gf_natsd *plain = start_server(NULL);
    servers[0] = gf_natsd_url(plain);
    cfg.tls = (gf_tls_config){true, ca, cert, key};
    expect_refused(try_open(&cfg, 0, plain, NULL), "server without TLS", 1);
    gf_natsd_free(plain);
}

/* ---- .creds under an operator ------------------------------------------------------ */

static void operator_creds(void **state)
{
    (void)state;
    au_key op, account, user, stranger_account, stranger;
    au_key_new(&op, GF__NKEY_OPERATOR);
    au_key_new(&account, GF__NKEY_ACCOUNT);
    au_key_new(&user, GF__NKEY_USER);
    au_key_new(&stranger_account, GF__NKEY_ACCOUNT);
    au_key_new(&stranger, GF__NKEY_USER);

    char *op_jwt = au_operator_jwt(&op);
    char *account_jwt = au_account_jwt(&op, &account);
    char *user_jwt = au_user_jwt(&account, &user);
    char *stranger_jwt = au_user_jwt(&stranger_account, &stranger);
    char op_path[512], creds[512], extra[EXTRA_MAX];
    snprintf(op_path, sizeof op_path, "%s", au_write("operator.jwt", op_jwt));
    snprintf(extra, sizeof extra,
             "operator: \"%s\"\nresolver: MEMORY\nresolver_preload: {\n  %s: \"%s\"\n}\n", op_path,
             account.pub, account_jwt);
    gf_natsd *server = start_server(extra);
    const char *servers[] = {gf_natsd_url(server)};
    gf_nats_config cfg = config_for(servers);

    json_t *conn = NULL;
    snprintf(creds, sizeof creds, "%s", au_write_creds("user.creds", user_jwt, &user));
    cfg.credentials = creds;
    attempt a = try_open(&cfg, 0, server, &conn);
    assert_int_equal(a.err, GF_OK);
    assert_string_equal(field(conn, "account"), account.pub);
    assert_string_equal(field(conn, "authorized_user"), user.pub);
    json_decref(conn);
    au_assert_no_secret(a.log, user.seed);
    assert_int_equal(au_count_lines(a.log, "secret file is accessible to other users"), 0);

    assert_int_equal(chmod(creds, 0640), 0); /* readable by the group */
    a = try_open(&cfg, 0, server, NULL);
    assert_int_equal(a.err, GF_OK);
    assert_int_equal(au_count_lines(a.log, "secret file is accessible to other users"), 1);
    assert_int_equal(au_count_lines(a.log, "option=nats.credentials"), 1);

    /* A user of an account the server does not know. */
    snprintf(creds, sizeof creds, "%s", au_write_creds("stranger.creds", stranger_jwt, &stranger));
    a = try_open(&cfg, 0, server, NULL);
    expect_refused(a, "unknown account", SIGNED_TRIES);
    au_assert_no_secret(a.log, stranger.seed);

    /* The right JWT with another user's seed: the nonce signature does not match. */
    snprintf(creds, sizeof creds, "%s", au_write_creds("mismatch.creds", user_jwt, &stranger));
    expect_refused(try_open(&cfg, 0, server, NULL), "seed of another user", SIGNED_TRIES);

    snprintf(creds, sizeof creds, "%s", au_path("missing.creds"));
    a = try_open(&cfg, 0, server, NULL);
    assert_int_equal(a.err, GF_ERR_CONFIG);
    assert_int_equal(a.tries, 0);

    gf_natsd_free(server);
    free(op_jwt);
    free(account_jwt);
    free(user_jwt);
    free(stranger_jwt);
}

static int group_setup(void **state)
{
    if (th_group_setup(state) != 0)
        return -1;
    au_setup();
    gf_log_init("test_conn_auth", GF_LOG_DEBUG);
    return 0;
}

static int group_teardown(void **state)
{
    au_teardown();
    return th_group_teardown(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(user_password),
        cmocka_unit_test(nkey_seed),
        cmocka_unit_test(mutual_tls),
        cmocka_unit_test(operator_creds),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
