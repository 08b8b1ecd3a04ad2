/*
 * cli_util.c — what every gamefn command shares: connecting with a clear error, requests
 * to functions (query.h) and JetStream API failures turned into exit codes, option values
 * (durations, integers, times), JSON and number output.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/wire_error.h"
#include "query.h"

int gf_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gamefn %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see gamefn %s --help)\n", cmd);
    va_end(ap);
    return GF_CLI_USAGE;
}

bool gf_cli_duration(const char *cmd, const char *opt, const char *text, int64_t min, int64_t max,
                     int64_t *ms)
{
    int64_t v = 0;
    if (gf_config_parse_duration_ms(text, &v) != GF_OK || v < min || v > max) {
        char lo[32], hi[32];
        fprintf(stderr,
                "gamefn%s%s: %s must be a duration from %s to %s (e.g. 500ms, 5s, 2m), not '%s'\n",
                cmd[0] ? " " : "", cmd, opt, gf_config_format_duration(min, lo, sizeof lo),
                gf_config_format_duration(max, hi, sizeof hi), text);
        return false;
    }
    *ms = v;
    return true;
}

bool gf_cli_integer(const char *cmd, const char *opt, const char *text, long long min,
                    long long max, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (!text[0] || *end || errno || v < min || v > max) {
        gf_cli_usage_error(cmd, "%s must be an integer from %lld to %lld, not '%s'", opt, min, max,
                           text);
        return false;
    }
    *out = v;
    return true;
}

bool gf_cli_since(const char *cmd, const char *opt, const char *text, int64_t *unix_ms)
{
    int64_t v = 0, ns = 0;
    char *end = NULL;
    if (gf_config_parse_duration_ms(text, &v) == GF_OK) {
        v = gf_clock_unix_ms() - v; /* a duration ago */
    } else if (gf_clock_parse_rfc3339(text, &ns) == GF_OK) {
        v = ns / 1000000;
    } else {
        errno = 0;
        long long ms = strtoll(text, &end, 10); /* Unix ms */
        v = end != text && !*end && !errno ? ms : -1;
    }
    if (v <= 0) {
        gf_cli_usage_error(cmd,
                           "%s takes a duration ago (10m, 2h), an RFC 3339 time "
                           "(2026-01-01T12:00:00Z) or Unix ms, not '%s'",
                           opt, text);
        return false;
    }
    *unix_ms = v;
    return true;
}

int gf_cli_js_error(const char *cmd, const char *what, natsStatus s, jsErrCode jerr)
{
    const char *text = nats_GetLastError(NULL);
    if (!text || !*text)
        text = natsStatus_GetText(s);
    if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr || jerr == JSConsumerNotFoundErr ||
        jerr == JSNoMessageFoundErr) {
        fprintf(stderr, "gamefn %s: %s: not found\n", cmd, what);
        return GF_CLI_NOT_FOUND;
    }
    if (s == NATS_TIMEOUT) {
        fprintf(stderr,
                "gamefn %s: %s: the JetStream API did not answer (JetStream enabled? may this "
                "user use it?)\n",
                cmd, what);
        return GF_CLI_TIMEOUT;
    }
    fprintf(stderr, "gamefn %s: %s: %s\n", cmd, what, text);
    return s == NATS_NOT_PERMITTED || s == NATS_NO_RESPONDERS || jerr != 0 ? GF_CLI_REFUSED
                                                                           : GF_CLI_FAILED;
}

int gf_cli_connect(gf_cli *cli, const char *cmd, gf_conn **out)
{
    cli->nats = cli->cfg->nats;
    if (cli->inbox_prefix)
        cli->nats.inbox_prefix = cli->inbox_prefix;
    char servers[512] = "";
    for (size_t i = 0; i < cli->nats.servers_len; i++) {
        size_t n = strlen(servers);
        snprintf(servers + n, sizeof servers - n, "%s%s", i ? "," : "", cli->nats.servers[i]);
    }
    /* Each failed attempt would log a warning: the one line below says it all. */
    gf_log_level level = gf_log_get_level();
    if (level < GF_LOG_ERROR)
        gf_log_set_level(GF_LOG_ERROR);
    gf_err err = gf_conn_open(&cli->nats, "gamefn-cli", NULL, cli->connect_timeout_ms, out);
    gf_log_set_level(level);
    if (err == GF_OK)
        return GF_CLI_OK;
    if (err == GF_ERR_CONFIG) {
        fprintf(stderr,
                "gamefn %s: cannot connect to NATS at %s: refused or misconfigured (see "
                "the error above; nats.* in %s)\n",
                cmd, servers, cli->config_path);
        return GF_CLI_UNREACHABLE;
    }
    char d[32];
    fprintf(stderr,
            "gamefn %s: cannot connect to NATS at %s: no server answered within %s (is "
            "nats-server running? set nats.servers or GAMEFN_NATS_URL)\n",
            cmd, servers, gf_config_format_duration(cli->connect_timeout_ms, d, sizeof d));
    return GF_CLI_UNREACHABLE;
}

int gf_cli_request(natsConnection *nc, const char *cmd, const char *subject,
                   const ProtobufCMessage *req, const ProtobufCMessageDescriptor *desc,
                   int64_t timeout_ms, ProtobufCMessage **out, int *code, char *field,
                   size_t field_size)
{
    if (code)
        *code = 0;
    if (field && field_size)
        field[0] = 0;
    gf_query_error qe;
    switch (gf_query(nc, subject, req, desc, timeout_ms, out, &qe)) {
    case GF_QUERY_OK:
        return GF_CLI_OK;
    case GF_QUERY_NO_SERVICE:
        fprintf(stderr, "gamefn %s: no function instance serves %s (is it running?)\n", cmd,
                subject);
        return GF_CLI_NO_SERVICE;
    case GF_QUERY_TIMEOUT:
        fprintf(stderr, "gamefn %s: no answer on %s within %lld ms\n", cmd, subject,
                (long long)timeout_ms);
        return GF_CLI_TIMEOUT;
    case GF_QUERY_FAILED:
        fprintf(stderr, "gamefn %s: request on %s failed: %s\n", cmd, subject,
                natsStatus_GetText(qe.status));
        return qe.status == NATS_NOT_PERMITTED ? GF_CLI_REFUSED : GF_CLI_FAILED;
    case GF_QUERY_UNDECODABLE:
        fprintf(stderr, "gamefn %s: the answer on %s is not a %s\n", cmd, subject, desc->name);
        return GF_CLI_FAILED;
    case GF_QUERY_ERROR_REPLY:
        break;
    }
    const gf_wire_error *e = &qe.wire;
    if (code)
        *code = e->code;
    if (field)
        snprintf(field, field_size, "%s", e->field);
    const char *name = gf_wire_code_name(e->code);
    /* The field, unless the message already starts with it ("queue: unknown ..."). */
    size_t flen = strlen(e->field);
    bool named = flen == 0 || (strncmp(e->message, e->field, flen) == 0 && e->message[flen] == ':');
    fprintf(stderr, "gamefn %s: %s: %s%s%s\n", cmd, name, named ? "" : e->field, named ? "" : ": ",
            e->message);
    /* An unknown name (queue, datacenter, region) is INVALID_ARGUMENT on the wire. */
    bool unknown = strcmp(name, "NOT_FOUND") == 0 ||
                   (strcmp(name, "INVALID_ARGUMENT") == 0 && strstr(e->message, "unknown "));
    return unknown ? GF_CLI_NOT_FOUND : GF_CLI_REFUSED;
}

int gf_cli_ask(gf_cli *cli, const char *cmd, const char *subject, const ProtobufCMessage *req,
               const ProtobufCMessageDescriptor *desc, int64_t timeout_ms, ProtobufCMessage **out)
{
    *out = NULL;
    gf_conn *conn = NULL;
    int rc = gf_cli_connect(cli, cmd, &conn);
    if (rc != GF_CLI_OK)
        return rc;
    rc =
        gf_cli_request(gf_conn_nats(conn), cmd, subject, req, desc, timeout_ms, out, NULL, NULL, 0);
    gf_conn_close(conn, 1000);
    return rc;
}

/* Every answer to a $SRV request on `subject`, parsed, until wait_ms pass quietly. */
json_t *gf_cli_srv_collect(natsConnection *nc, const char *subject, int64_t wait_ms)
{
    json_t *all = json_array();
    natsSubscription *sub = NULL;
    natsInbox *inbox = NULL;
    if (natsInbox_Create(&inbox) == NATS_OK &&
        natsConnection_SubscribeSync(&sub, nc, inbox) == NATS_OK &&
        natsConnection_PublishRequest(nc, subject, inbox, NULL, 0) == NATS_OK) {
        natsMsg *m = NULL;
        while (natsSubscription_NextMsg(&m, sub, wait_ms) == NATS_OK) {
            json_t *j = json_loadb(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), 0, NULL);
            if (json_is_object(j))
                json_array_append_new(all, j);
            else
                json_decref(j);
            natsMsg_Destroy(m);
        }
    }
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    return all;
}

void gf_cli_json_print(json_t *j, bool compact)
{
    if (!j) {
        fprintf(stderr, "gamefn: out of memory\n");
        return;
    }
    json_dumpf(j, stdout, compact ? JSON_COMPACT : JSON_INDENT(2));
    fputc('\n', stdout);
    fflush(stdout);
    json_decref(j);
}

char *gf_cli_thousands(uint64_t n, char *buf, size_t size)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
    size_t at = 0;
    for (int i = 0; i < len && at + 2 < size; i++) {
        if (i && (len - i) % 3 == 0)
            buf[at++] = ',';
        buf[at++] = digits[i];
    }
    buf[at] = 0;
    return buf;
}

char *gf_cli_time(int64_t unix_ms, char *buf, size_t size)
{
    if (unix_ms <= 0) {
        snprintf(buf, size, "-");
        return buf;
    }
    return gf_clock_rfc3339(unix_ms * 1000000, 3, buf, size);
}
