/* fn_support.c — see fn_support.h. */
#include "fn_support.h"

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "gamefn/clock.h"

/* The config every test starts from; the %s are, in order: the server list, extra
 * entries of the nats section, the runtime section's body, the replicas of TEST_JOBS and
 * TEST_RESULTS, extra streams, the settings of consumer TEST_JOBS/worker, extra
 * consumers, the replicas of TEST_LEASES and of leases, extra buckets, and the functions
 * section's body. */
static const char config_template[] = "nats:\n"
                                      "  servers: [%s]\n"
                                      "  reconnect_wait: 100ms\n"
                                      "  reconnect_jitter: 50ms\n"
                                      "  reconnect_max_wait: 500ms\n"
                                      "%s"
                                      "log:\n"
                                      "  level: info\n"
                                      "runtime:\n"
                                      "%s"
                                      "jetstream:\n"
                                      "  streams:\n"
                                      "    - name: TEST_JOBS\n"
                                      "      subjects: [test.jobs]\n"
                                      "      replicas: %d\n"
                                      "    - name: TEST_RESULTS\n"
                                      "      subjects: [\"test.results.>\"]\n"
                                      "      replicas: %d\n"
                                      "%s"
                                      "  consumers:\n"
                                      "    - stream: TEST_JOBS\n"
                                      "      name: worker\n"
                                      "%s"
                                      "%s"
                                      "  buckets:\n"
                                      "    - name: TEST_LEASES\n"
                                      "      replicas: %d\n"
                                      "    - name: leases\n"
                                      "      replicas: %d\n"
                                      "%s"
                                      "functions:\n"
                                      "%s";

static const char default_runtime[] = "  drain_timeout: 5s\n"
                                      "  fetch_batch: 8\n"
                                      "  max_in_flight: 8\n"
                                      "  fetch_expiry: 1s\n"
                                      "  heartbeat: 250ms\n";

static const char default_worker[] = "      ack_wait: 2s\n"
                                     "      max_deliver: 5\n";

static const char *or_default(const char *s, const char *def)
{
    return s ? s : def;
}

/* Writes the config and connects the test's own client to every server. */
static int setup(gf_fnenv *env, const char *urls, int replicas, const gf_fnenv_opts *opts)
{
    char quoted[1024] = "";
    const char *servers[8];
    char list[1024];
    int n = 0;
    snprintf(list, sizeof list, "%s", urls);
    for (char *save = NULL, *u = strtok_r(list, ",", &save); u && n < 8;
         u = strtok_r(NULL, ",", &save)) {
        size_t used = strlen(quoted);
        snprintf(quoted + used, sizeof quoted - used, "%s\"%s\"", n ? ", " : "", u);
        servers[n++] = u;
    }
    snprintf(env->config_path, sizeof env->config_path, "%s/gamefn.yaml", env->dir);
    FILE *f = fopen(env->config_path, "w");
    if (!f)
        return -1;
    fprintf(f, config_template, quoted, or_default(opts->nats, ""),
            or_default(opts->runtime, default_runtime), replicas, replicas,
            or_default(opts->streams, ""), or_default(opts->worker, default_worker),
            or_default(opts->consumers, ""), replicas, replicas, or_default(opts->buckets, ""),
            or_default(opts->functions, "  {}\n"));
    fclose(f);
    if (opts->no_client)
        return 0;

    natsOptions *o = NULL;
    natsOptions_Create(&o);
    natsOptions_SetServers(o, servers, n);
    natsOptions_SetSendAsap(o, true);
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, 100);
    if (opts->client_user)
        natsOptions_SetUserInfo(o, opts->client_user, opts->client_password);
    natsStatus s = natsConnection_Connect(&env->nc, o);
    natsOptions_Destroy(o);
    if (s == NATS_OK) {
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.Wait = 10000; /* rides out a cluster leader election */
        s = natsConnection_JetStream(&env->js, env->nc, &jo);
    }
    return s == NATS_OK ? 0 : -1;
}

static int make_dir(gf_fnenv *env)
{
    memset(env, 0, sizeof *env);
    snprintf(env->dir, sizeof env->dir, "/tmp/gamefn-fntest-XXXXXX");
    return mkdtemp(env->dir) ? 0 : -1;
}

int gf_fnenv_start_opts(gf_fnenv *env, const gf_fnenv_opts *o)
{
    gf_natsd_opts server = {.no_jetstream = o->no_jetstream, .extra_config = o->server_config};
    if (make_dir(env) != 0)
        return -1;
    if (o->nodes > 1) {
        if (gf_natsd_cluster_start(o->nodes, &server, &env->cluster) != 0)
            return -1;
        return setup(env, gf_natsd_cluster_urls(env->cluster), o->nodes, o);
    }
    if (gf_natsd_start(&server, &env->natsd) != 0)
        return -1;
    return setup(env, gf_natsd_url(env->natsd), 1, o);
}

const char *gf_fnenv_shipped_accounts(void)
{
    static char text[65536];
    char path[512];
    const char *src = getenv("GAMEFN_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/deploy/nats/accounts.conf", src && src[0] ? src : ".");
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    static const char var[] = "$GAMEFN_", suffix[] = "_PASSWORD";
    for (const char *p = strstr(text, var); p; p = strstr(p + 1, var)) {
        const char *user = p + sizeof var - 1, *end = user;
        while ((*end >= 'A' && *end <= 'Z') || (*end >= '0' && *end <= '9') || *end == '_')
            end++;
        size_t len = (size_t)(end - user);
        if (len <= sizeof suffix - 1 ||
            strncmp(end - (sizeof suffix - 1), suffix, sizeof suffix - 1))
            continue;
        char name[96], value[96];
        size_t ulen = len - (sizeof suffix - 1);
        snprintf(name, sizeof name, "GAMEFN_%.*s", (int)len, user);
        snprintf(value, sizeof value, "pw-%.*s", (int)ulen, user);
        setenv(name, value, 1);
    }
    return text;
}

static int lines_with(const char *path, const char *needle);

void gf_fnenv_shipped_password(const char *user, char *out, size_t size)
{
    size_t n = (size_t)snprintf(out, size, "pw-");
    for (const char *c = user; *c && n + 1 < size; c++)
        out[n++] = (char)toupper((unsigned char)*c);
    out[n] = '\0';
}

void gf_fnenv_shipped_login(const char *user, gf_fnenv_login *out)
{
    char password[80];
    gf_fnenv_shipped_password(user, password, sizeof password);
    snprintf(out->user, sizeof out->user, "GAMEFN_NATS_USER=%s", user);
    snprintf(out->password, sizeof out->password, "GAMEFN_NATS_PASSWORD=%s", password);
}

natsConnection *gf_fnenv_connect_as(gf_fnenv *env, const char *user, const char *password,
                                    const char *inbox_prefix)
{
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    if (natsOptions_Create(&o) != NATS_OK)
        return NULL;
    natsOptions_SetURL(o, gf_natsd_url(env->natsd));
    natsOptions_SetUserInfo(o, user, password);
    natsOptions_SetSendAsap(o, true);
    if (natsOptions_SetCustomInboxPrefix(o, inbox_prefix) != NATS_OK ||
        natsConnection_Connect(&nc, o) != NATS_OK)
        nc = NULL;
    natsOptions_Destroy(o);
    return nc;
}

int gf_fnenv_server_log_count(gf_fnenv *env, const char *needle)
{
    return lines_with(gf_natsd_log_path(env->natsd), needle);
}

int gf_fnenv_start(gf_fnenv *env, const char *functions_yaml)
{
    gf_fnenv_opts o = {.functions = functions_yaml};
    return gf_fnenv_start_opts(env, &o);
}

int gf_fnenv_start_cluster(gf_fnenv *env, int nodes, const char *functions_yaml)
{
    gf_fnenv_opts o = {.functions = functions_yaml, .nodes = nodes};
    return gf_fnenv_start_opts(env, &o);
}

static void remove_dir(const char *dir)
{
    char cmd[400];
    /* The directory is ours (mkdtemp); plain files only. */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fn_support: could not remove %s\n", dir);
}

void gf_fnenv_free(gf_fnenv *env)
{
    jsCtx_Destroy(env->js);
    if (env->nc) {
        natsConnection_Close(env->nc);
        natsConnection_Destroy(env->nc);
    }
    gf_natsd_free(env->natsd);
    gf_natsd_cluster_free(env->cluster);
    if (env->dir[0])
        remove_dir(env->dir);
    memset(env, 0, sizeof *env);
}

const char *gf_fnenv_binary(const char *relative, char *buf, size_t size)
{
    const char *build = getenv("GAMEFN_BUILD_DIR");
    snprintf(buf, size, "%s/%s", build && build[0] ? build : ".", relative);
    return buf;
}

int gf_fnenv_spawn(gf_fnenv *env, gf_proc *p, const char *relative, const char *instance,
                   char *const extra_env[])
{
    char bin[512], log[400];
    gf_fnenv_binary(relative, bin, sizeof bin);
    snprintf(log, sizeof log, "%s/%s.log", env->dir, instance);
    char inst[128];
    snprintf(inst, sizeof inst, "%s", instance);
    char *argv[] = {bin, "--config", env->config_path, "--instance", inst, NULL};
    return gf_proc_spawn(p, argv, extra_env, log);
}

int gf_fnenv_srv(gf_fnenv *env, const char *subject, char **json)
{
    natsMsg *reply = NULL;
    *json = NULL;
    if (natsConnection_Request(&reply, env->nc, subject, NULL, 0, 1000) != NATS_OK)
        return -1;
    *json = strndup(natsMsg_GetData(reply), (size_t)natsMsg_GetDataLength(reply));
    natsMsg_Destroy(reply);
    return *json ? 0 : -1;
}

int gf_fnenv_health(gf_fnenv *env, const char *name, const char *id, char *why, size_t why_size)
{
    char subject[256], *text = NULL;
    snprintf(subject, sizeof subject, "$SRV.INFO.%s.%s", name, id);
    if (gf_fnenv_srv(env, subject, &text) != 0)
        return -1;
    json_t *root = json_loads(text, 0, NULL);
    free(text);
    json_t *md = json_object_get(root, "metadata");
    const char *healthy = json_string_value(json_object_get(md, "healthy"));
    const char *reason = json_string_value(json_object_get(md, "unhealthy"));
    int rc = healthy && strcmp(healthy, "true") == 0 ? 1 : healthy ? 0 : -1;
    if (rc == 0 && why)
        snprintf(why, why_size, "%s", reason ? reason : "");
    json_decref(root);
    return rc;
}

bool gf_fnenv_health_is(gf_fnenv *env, void *want)
{
    const gf_fnenv_health_want *w = want;
    char why[512] = "";
    int health = gf_fnenv_health(env, w->name, w->id, why, sizeof why);
    bool pings = gf_fnenv_wait_ping(env, w->name, w->id, 100);
    if (w->reason == NULL)
        return health == 1 && pings;
    return health == 0 && !pings && strstr(why, w->reason) != NULL;
}

int gf_fnenv_spawn_ready(gf_fnenv *env, gf_proc *p, const char *relative, const char *name,
                         const char *instance, char *const extra_env[])
{
    if (gf_fnenv_spawn(env, p, relative, instance, extra_env) != 0)
        return -1;
    return gf_fnenv_wait_ready(env, p, name, instance, 10000) ? 0 : -1;
}

/* A child that did not do `what`: on stderr, whether it still runs or how it ended (it
 * is reaped first if it ended), then the end of its log. */
static void say_what_became_of(gf_proc *p, const char *what, int timeout_ms)
{
    char how[128];
    gf_proc_running(p);
    gf_proc_describe(p, how, sizeof how);
    fprintf(stderr, "--- %s %s within %d ms: %s\n", p->log_path, what, timeout_ms, how);
    gf_proc_dump_log(p, 30);
}

bool gf_fnenv_wait_ready(gf_fnenv *env, gf_proc *p, const char *name, const char *instance,
                         int timeout_ms)
{
    if (gf_fnenv_wait_ping(env, name, instance, timeout_ms))
        return true;
    say_what_became_of(p, "did not answer $SRV.PING", timeout_ms);
    return false;
}

natsStatus gf_fnenv_add_stream(jsCtx *js, const char *name, const char *subject)
{
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = name;
    sc.Subjects = &subject;
    sc.SubjectsLen = 1;
    return js_AddStream(NULL, js, &sc, NULL, NULL);
}

natsStatus gf_fnenv_stream_full(gf_fnenv *env, const char *stream, bool full)
{
    jsStreamInfo *si = NULL;
    natsStatus s = js_GetStreamInfo(&si, env->js, stream, NULL, NULL);
    if (s == NATS_OK && si->Config->Discard != js_DiscardNew)
        s = NATS_ILLEGAL_STATE; /* discard old would drop the oldest instead of refusing */
    if (s == NATS_OK) {
        /* Exactly what it holds: below it, nats-server 2.9.10 would delete the oldest
         * messages to fit (discard new notwithstanding). */
        int64_t held = (int64_t)si->State.Bytes;
        si->Config->MaxBytes = !full ? -1 : held > 0 ? held : 1;
        s = js_UpdateStream(NULL, env->js, si->Config, NULL, NULL);
    }
    jsStreamInfo_Destroy(si);
    return s;
}

bool gf_fnenv_stop(gf_proc *p, int timeout_ms)
{
    gf_proc_signal(p, SIGTERM);
    if (gf_proc_wait(p, timeout_ms) == 0 && gf_proc_exited_with(p, 0))
        return true;
    say_what_became_of(p, "did not exit 0 after SIGTERM", timeout_ms);
    return false;
}

bool gf_fnenv_wait_ping(gf_fnenv *env, const char *name, const char *id, int timeout_ms)
{
    char subject[256];
    snprintf(subject, sizeof subject, "$SRV.PING.%s.%s", name, id);
    for (int waited = 0; waited < timeout_ms; waited += 100) {
        natsMsg *reply = NULL;
        if (natsConnection_Request(&reply, env->nc, subject, NULL, 0, 100) == NATS_OK) {
            natsMsg_Destroy(reply);
            return true;
        }
        gf_clock_sleep_ms(100);
    }
    return false;
}

int gf_fnenv_results(gf_fnenv *env, const char *subject, gf_lines *out)
{
    jsStreamInfo *si = NULL;
    memset(out, 0, sizeof *out);
    if (js_GetStreamInfo(&si, env->js, "TEST_RESULTS", NULL, NULL) != NATS_OK)
        return -1;
    uint64_t first = si->State.FirstSeq, last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    out->lines = calloc(last + 1, sizeof *out->lines);
    if (!out->lines)
        return -1;
    for (uint64_t seq = first; seq <= last && last > 0; seq++) {
        natsMsg *m = NULL;
        if (js_GetMsg(&m, env->js, "TEST_RESULTS", seq, NULL, NULL) != NATS_OK)
            continue;
        if (strcmp(natsMsg_GetSubject(m), subject) == 0)
            out->lines[out->count++] =
                strndup(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m));
        natsMsg_Destroy(m);
    }
    return 0;
}

void gf_fnenv_lines_free(gf_lines *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->lines[i]);
    free(l->lines);
    memset(l, 0, sizeof *l);
}

int gf_fnenv_publish_job(gf_fnenv *env, const char *job)
{
    return js_Publish(NULL, env->js, "test.jobs", job, (int)strlen(job), NULL, NULL) == NATS_OK
               ? 0
               : -1;
}

int gf_fnenv_publish_jobs(gf_fnenv *env, int from, int to, const char *mode)
{
    for (int i = from; i < to; i++) {
        char job[64];
        snprintf(job, sizeof job, "j%d%s%s", i, mode ? " " : "", mode ? mode : "");
        if (gf_fnenv_publish_job(env, job) != 0)
            return -1;
    }
    return 0;
}

bool gf_fnenv_jobs_settled(gf_fnenv *env, void *arg)
{
    jsConsumerInfo *ci = NULL;
    (void)arg;
    if (js_GetConsumerInfo(&ci, env->js, "TEST_JOBS", "worker", NULL, NULL) != NATS_OK)
        return false;
    bool settled = ci->NumPending == 0 && ci->NumAckPending == 0;
    jsConsumerInfo_Destroy(ci);
    return settled;
}

bool gf_fnenv_eventually(bool (*pred)(gf_fnenv *env, void *arg), gf_fnenv *env, void *arg,
                         int timeout_ms)
{
    for (int waited = 0;; waited += 50) {
        if (pred(env, arg))
            return true;
        if (waited >= timeout_ms)
            return false;
        gf_clock_sleep_ms(50);
    }
}

/* Lines of the file at `path` containing `needle`; -1 if it cannot be read. */
static int lines_with(const char *path, const char *needle)
{
    char line[4096];
    int n = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

int gf_fnenv_log_count(const gf_proc *p, const char *needle)
{
    return lines_with(p->log_path, needle);
}

bool gf_fnenv_wait_log(const gf_proc *p, const char *needle, int timeout_ms)
{
    for (int waited = 0;; waited += 50) {
        if (gf_fnenv_log_count(p, needle) > 0)
            return true;
        if (waited >= timeout_ms)
            return false;
        gf_clock_sleep_ms(50);
    }
}
