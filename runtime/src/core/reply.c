/*
 * reply.c — where a function may publish a reply (see core/reply.h).
 *
 * Design notes: a prefix ends with '.', so "_INBOX." covers "_INBOX.abc" but not
 * "_INBOXES.abc"; the reserved spaces are whole first tokens for the same reason.
 * The log is rate-limited because refusals are requester-driven: one hostile client
 * must not be able to flood the log (the counters in $SRV STATS keep the totals).
 */
#include "core/reply.h"

#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/names.h"

static const char *const reserved[] = {"$JS.", "$KV.", "$O.", "$SYS.", "$SRV.", "gamefn."};

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool is_reserved(const char *subject)
{
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
        if (starts_with(subject, reserved[i]))
            return true;
    }
    return false;
}

const char *gf__reply_prefix_problem(const char *prefix)
{
    char body[256];
    size_t n = prefix ? strlen(prefix) : 0;
    if (n == 0)
        return "is empty";
    if (prefix[n - 1] != '.')
        return "must end with '.' (a prefix is whole subject tokens, e.g. \"_INBOX.\")";
    if (n >= sizeof body)
        return "is longer than 255 bytes";
    memcpy(body, prefix, n - 1);
    body[n - 1] = '\0';
    if (!gf_name_subject_ok(body, false, NULL, 0))
        return "must be literal subject tokens (no wildcard, no empty token, no whitespace)";
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
        if (starts_with(prefix, reserved[i]) || starts_with(reserved[i], prefix))
            return "is in a reserved subject space ($JS., $KV., $O., $SYS., $SRV., gamefn.): "
                   "a reply never goes there";
    }
    return NULL;
}

bool gf__reply_allowed(const char *subject, const char *const *prefixes, size_t n)
{
    static const char *const fallback[] = {GF__REPLY_DEFAULT_PREFIX};
    if (!subject || is_reserved(subject) || !gf_name_subject_ok(subject, false, NULL, 0))
        return false;
    if (n == 0 || !prefixes) {
        prefixes = fallback;
        n = 1;
    }
    for (size_t i = 0; i < n; i++) {
        if (prefixes[i] && prefixes[i][0] && starts_with(subject, prefixes[i]) &&
            subject[strlen(prefixes[i])] != '\0')
            return true;
    }
    return false;
}

void gf__reply_guard_init(gf__reply_guard *g, const char *const *prefixes, size_t n,
                          const char *where)
{
    g->prefixes = prefixes;
    g->prefixes_len = n;
    g->where = where ? where : "";
    atomic_store(&g->refused, 0);
    atomic_store(&g->unlogged, 0);
    atomic_store(&g->next_log_ms, 0);
}

bool gf__reply_guard_check(gf__reply_guard *g, const char *reply)
{
    if (gf__reply_allowed(reply, g->prefixes, g->prefixes_len))
        return true;
    long long total = atomic_fetch_add(&g->refused, 1) + 1;
    int64_t now = gf_clock_mono_ms();
    long long next = atomic_load(&g->next_log_ms);
    if (now < next ||
        !atomic_compare_exchange_strong(&g->next_log_ms, &next, now + GF__REPLY_LOG_EVERY_MS)) {
        atomic_fetch_add(&g->unlogged, 1);
        return false;
    }
    char quoted[160];
    long long unlogged = atomic_exchange(&g->unlogged, 0);
    gf_log_warn("reply refused: the reply subject is not an allowed inbox",
                "where=%s subject=%s refused_total=%lld not_logged=%lld "
                "hint=\"runtime.reply_prefixes lists where replies may go\"",
                g->where, gf_log_quote(quoted, sizeof quoted, reply ? reply : ""), total, unlogged);
    return false;
}
