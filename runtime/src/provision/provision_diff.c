/*
 * provision_diff.c — difference lists, value formatting and reporting for provisioning.
 *
 * Design notes: messages are built into fixed buffers (gf_provision_result has a
 * 512-byte message), fixed differences first so that what blocks an update is
 * never the part that gets truncated. Formatting mirrors how config is written
 * (durations "7d", "10m", "250ms"), so the message can be compared with the YAML
 * by eye.
 */
#include "provision_diff.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/why.h"
#include "gamefn/log.h"
#include "nats/nats_err.h"

void gf__prov_diff_init(gf__prov_diff *d)
{
    memset(d, 0, sizeof *d);
}

static void diff_append(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void diff_append(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
    if (*len >= size - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, size - *len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    *len += (size_t)n;
    if (*len > size - 1)
        *len = size - 1; /* truncated; snprintf already terminated it */
}

void gf__prov_diff_add(gf__prov_diff *d, bool editable, const char *field, const char *server,
                       const char *config)
{
    char *buf = editable ? d->editable : d->fixed;
    size_t *len = editable ? &d->editable_len : &d->fixed_len;
    size_t size = editable ? sizeof d->editable : sizeof d->fixed;
    int *count = editable ? &d->neditable : &d->nfixed;

    diff_append(buf, size, len, "%s%s is %s on the server, %s in config", *count ? "; " : "", field,
                server, config);
    (*count)++;
}

char *gf__prov_fmt_duration(char *buf, size_t size, int64_t ns, const char *zero)
{
    static const struct {
        int64_t ns;
        const char *unit;
    } units[] = {
        {86400LL * 1000000000LL, "d"},
        {3600LL * 1000000000LL, "h"},
        {60LL * 1000000000LL, "m"},
        {1000000000LL, "s"},
        {1000000LL, "ms"},
        {1000LL, "us"},
    };
    if (ns == 0 && zero != NULL) {
        snprintf(buf, size, "%s", zero);
        return buf;
    }
    if (ns != 0) {
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
            if (ns % units[i].ns == 0) {
                snprintf(buf, size, "%lld%s", (long long)(ns / units[i].ns), units[i].unit);
                return buf;
            }
        }
    }
    snprintf(buf, size, "%lldns", (long long)ns);
    return buf;
}

char *gf__prov_fmt_limit(char *buf, size_t size, int64_t v)
{
    if (v < 0)
        snprintf(buf, size, "unlimited");
    else
        snprintf(buf, size, "%lld", (long long)v);
    return buf;
}

void gf__prov_diff_duration(gf__prov_diff *d, bool editable, const char *field, int64_t server_ns,
                            int64_t config_ns, const char *zero)
{
    char a[32], b[32];
    if (server_ns == config_ns)
        return;
    gf__prov_diff_add(d, editable, field, gf__prov_fmt_duration(a, sizeof a, server_ns, zero),
                      gf__prov_fmt_duration(b, sizeof b, config_ns, zero));
}

void gf__prov_diff_limit(gf__prov_diff *d, bool editable, const char *field, int64_t server,
                         int64_t config)
{
    char a[32], b[32];
    if (server == config || (server < 0 && config < 0))
        return;
    gf__prov_diff_add(d, editable, field, gf__prov_fmt_limit(a, sizeof a, server),
                      gf__prov_fmt_limit(b, sizeof b, config));
}

void gf__prov_diff_string(gf__prov_diff *d, bool editable, const char *field, const char *server,
                          const char *config)
{
    char a[160], b[160];
    server = server ? server : "";
    config = config ? config : "";
    if (strcmp(server, config) == 0)
        return;
    gf__prov_diff_add(d, editable, field, gf_log_quote(a, sizeof a, server),
                      gf_log_quote(b, sizeof b, config));
}

static bool subject_in(const char *s, const char *const *set, int len)
{
    for (int i = 0; i < len; i++) {
        if (set[i] != NULL && strcmp(set[i], s) == 0)
            return true;
    }
    return false;
}

static void fmt_subjects(char *buf, size_t size, const char *const *set, int len)
{
    size_t n = 0;
    buf[0] = '\0';
    diff_append(buf, size, &n, "[");
    for (int i = 0; i < len; i++)
        diff_append(buf, size, &n, "%s%s", i ? ", " : "", set[i] ? set[i] : "");
    diff_append(buf, size, &n, "]");
}

void gf__prov_diff_subjects(gf__prov_diff *d, bool editable, const char *field,
                            const char *const *server, int server_len, const char *const *config,
                            int config_len)
{
    bool same = true;
    for (int i = 0; i < server_len && same; i++)
        same = subject_in(server[i], config, config_len);
    for (int i = 0; i < config_len && same; i++)
        same = subject_in(config[i], server, server_len);
    if (same)
        return;
    char a[200], b[200];
    fmt_subjects(a, sizeof a, server, server_len);
    fmt_subjects(b, sizeof b, config, config_len);
    gf__prov_diff_add(d, editable, field, a, b);
}

void gf__prov_diff_message(const gf__prov_diff *d, const char *asset, bool update, char *out,
                           size_t size)
{
    size_t n = 0;
    out[0] = '\0';
    diff_append(out, size, &n, "%s: ", asset);
    if (d->nfixed > 0) {
        diff_append(out, size, &n, "%s (cannot be changed in place)", d->fixed);
        if (d->neditable > 0)
            diff_append(out, size, &n, "; ");
    }
    if (d->neditable > 0)
        diff_append(out, size, &n, "%s", d->editable);
    if (d->nfixed == 0 && d->neditable > 0 && !update)
        diff_append(out, size, &n, " (editable in place: provision with update to apply)");
}

bool gf__prov_ms_ok(int64_t ms)
{
    return ms >= 0 && ms <= INT64_MAX / 1000000;
}

static const char *enum_name(const char *const *names, size_t n, int v)
{
    if (v < 0 || (size_t)v >= n)
        return "unknown";
    return names[v];
}

const char *gf__prov_retention_name(int v)
{
    static const char *const names[] = {"limits", "interest", "workqueue"};
    return enum_name(names, 3, v);
}

const char *gf__prov_storage_name(int v)
{
    static const char *const names[] = {"file", "memory"};
    return enum_name(names, 2, v);
}

const char *gf__prov_discard_name(int v)
{
    static const char *const names[] = {"old", "new"};
    return enum_name(names, 2, v);
}

/* Indexed by jsDeliverPolicy. */
const char *gf__prov_deliver_name(int v)
{
    static const char *const names[] = {
        "all", "last", "new", "by_start_sequence", "by_start_time", "last_per_subject"};
    return enum_name(names, 6, v);
}

/* Indexed by jsAckPolicy. */
const char *gf__prov_ack_name(int v)
{
    static const char *const names[] = {"explicit", "none", "all"};
    return enum_name(names, 3, v);
}

gf_provision_result *gf__prov_begin(gf_provision_result *res, gf_provision_result *local)
{
    if (res == NULL)
        res = local;
    memset(res, 0, sizeof *res);
    res->outcome = GF_PROVISION_UNCHANGED;
    return res;
}

bool gf__prov_created(const gf__prov_diff *diff, const char *asset, gf_provision_result *res)
{
    res->outcome = GF_PROVISION_CREATED;
    if (gf__prov_diff_empty(diff))
        return false;
    gf__prov_diff_message(diff, asset, true, res->message, sizeof res->message);
    return true;
}

void gf__prov_message(gf_provision_result *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gf__whyv(res->message, sizeof res->message, fmt, ap);
    va_end(ap);
}

const char *gf__prov_nats_text(natsStatus s)
{
    /* nats.c prefixes its text with "(jsm.c:1033): "; the server's words are
     * what an operator needs. */
    const char *text = gf__nats_last_error(s);
    const char *end = text[0] == '(' ? strstr(text, "): ") : NULL;
    return end ? end + 3 : text;
}

static const char *outcome_name(gf_provision_outcome o)
{
    switch (o) {
    case GF_PROVISION_CREATED:
        return "created";
    case GF_PROVISION_UPDATED:
        return "updated";
    case GF_PROVISION_UNCHANGED:
    default:
        return "unchanged";
    }
}

void gf__prov_report(const char *kind, const char *name, gf_err err, gf_provision_outcome outcome,
                     bool warn, const gf_provision_result *res)
{
    char q[600], qn[300];
    if (err != GF_OK)
        return; /* returned in res->message; the caller logs it where it handles it */
    gf_log_quote(qn, sizeof qn, name ? name : "");
    gf_log_level level = warn ? GF_LOG_WARN : GF_LOG_INFO;
    if (res->message[0] != '\0') {
        gf_log(level, "provisioned", "asset=%s name=%s outcome=%s detail=%s", kind, qn,
               outcome_name(outcome), gf_log_quote(q, sizeof q, res->message));
    } else {
        gf_log(level, "provisioned", "asset=%s name=%s outcome=%s", kind, qn,
               outcome_name(outcome));
    }
}

gf_err gf__prov_update_result(natsStatus s, jsErrCode jerr, const gf__prov_diff *still,
                              const char *asset, gf_provision_result *res)
{
    if (s == NATS_OK && !gf__prov_diff_empty(still)) {
        char text[sizeof res->message];
        gf__prov_diff_message(still, asset, true, text, sizeof text);
        gf__prov_message(res, "%s (updated, but the server still differs)", text);
        return GF_ERR_CONFLICT;
    }
    if (s != NATS_OK) {
        char diff_text[sizeof res->message];
        snprintf(diff_text, sizeof diff_text, "%s", res->message);
        gf__prov_message(res, "%s (the server refused the update: %s)", diff_text,
                         gf__prov_nats_text(s));
        return jerr != 0 ? GF_ERR_CONFLICT : gf_nats_err(s);
    }
    res->outcome = GF_PROVISION_UPDATED;
    return GF_OK;
}

jsStreamInfo *gf__prov_origin_direct_off(jsCtx *js, const jsStreamConfig *mirror)
{
    jsStreamInfo *oi = NULL;
    if (!mirror->Mirror || !mirror->Mirror->Name ||
        js_GetStreamInfo(&oi, js, mirror->Mirror->Name, NULL, NULL) != NATS_OK)
        return NULL;
    if (oi->Config->AllowDirect) {
        oi->Config->AllowDirect = false;
        if (js_UpdateStream(NULL, js, oi->Config, NULL, NULL) == NATS_OK)
            return oi;
    }
    jsStreamInfo_Destroy(oi);
    return NULL;
}

void gf__prov_origin_direct_restore(jsCtx *js, jsStreamInfo *oi, const jsStreamConfig *mirror)
{
    if (!oi)
        return;
    oi->Config->AllowDirect = true;
    natsStatus r = NATS_ERR;
    for (int attempt = 0; attempt < 5 && r != NATS_OK; attempt++)
        r = js_UpdateStream(NULL, js, oi->Config, NULL, NULL);
    if (r != NATS_OK)
        gf_log_error("stream lost allow_direct while its mirror was created or updated: its KV "
                     "readers fail until allow_direct is set on it again",
                     "stream=%s mirror=%s err=%s", oi->Config->Name, mirror->Name,
                     gf__prov_nats_text(r));
    jsStreamInfo_Destroy(oi);
}

/* nats-server 2.9.10 fits a stream into a lowered max_bytes or max_msgs at once by
 * deleting its oldest messages, whatever its discard policy (measured: a tickets bucket
 * set below its size lost its live tickets; later servers spare discard-new streams).
 * Under discard new that is never what the operator asked for — live tickets, claims,
 * players records, waiting Matches or unapplied events — so such an update is refused
 * with nothing changed. Under discard old dropping the oldest is the policy itself. */
static bool shrinks_below_contents(const jsStreamInfo *si, const jsStreamConfig *up,
                                   const char *asset, gf_provision_result *res)
{
    if (up->Discard != js_DiscardNew)
        return false;
    const char *field = NULL;
    uint64_t held = 0;
    int64_t limit = 0;
    if (up->MaxBytes > 0 && si->State.Bytes > (uint64_t)up->MaxBytes) {
        field = "max_bytes";
        held = si->State.Bytes;
        limit = up->MaxBytes;
    } else if (up->MaxMsgs > 0 && si->State.Msgs > (uint64_t)up->MaxMsgs) {
        field = "max_msgs";
        held = si->State.Msgs;
        limit = up->MaxMsgs;
    } else {
        return false;
    }
    gf__prov_message(res,
                     "%s: %s %lld is below the %llu %s stream %s holds: nats-server would delete "
                     "its oldest messages to fit (discard new notwithstanding); nothing was "
                     "changed: set at least %llu, or make room first",
                     asset, field, (long long)limit, (unsigned long long)held,
                     strcmp(field, "max_bytes") == 0 ? "bytes" : "messages", si->Config->Name,
                     (unsigned long long)held);
    return true;
}

gf_err gf__prov_stream_reconcile(jsCtx *js, const jsStreamInfo *si, const void *want,
                                 gf__prov_stream_compare_fn compare, gf__prov_stream_patch_fn patch,
                                 const char *asset, bool update, gf_provision_result *res)
{
    gf__prov_diff diff;
    gf__prov_diff_init(&diff);
    compare(si->Config, want, &diff);
    if (gf__prov_diff_empty(&diff)) {
        res->outcome = GF_PROVISION_UNCHANGED;
        return GF_OK;
    }
    gf__prov_diff_message(&diff, asset, update, res->message, sizeof res->message);
    if (!update || diff.nfixed > 0)
        return GF_ERR_CONFLICT;

    /* Everything that differs is editable: send the server's config with our
     * managed fields overwritten. */
    jsStreamConfig up = *si->Config;
    patch(&up, want);
    if (shrinks_below_contents(si, &up, asset, res))
        return GF_ERR_CONFLICT;
    jsStreamInfo *after = NULL;
    jsErrCode jerr = 0;
    jsStreamInfo *oi = gf__prov_origin_direct_off(js, &up); /* a mirror's update too */
    natsStatus s = js_UpdateStream(&after, js, &up, NULL, &jerr);
    gf__prov_origin_direct_restore(js, oi, &up);
    if (s == NATS_OK) {
        /* Trust but verify: what the server now reports must match. */
        gf__prov_diff_init(&diff);
        compare(after->Config, want, &diff);
    }
    jsStreamInfo_Destroy(after);
    return gf__prov_update_result(s, jerr, &diff, asset, res);
}
