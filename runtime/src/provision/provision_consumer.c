/*
 * provision_consumer.c — durable pull consumers from config.
 *
 * Design notes:
 *  - Same shape as streams (provision.c): read, create if absent, compare,
 *    update only on request and only editable fields.
 *  - Every consumer we provision is a durable pull consumer with explicit
 *    acks. An existing consumer of the same name that is push-based or has
 *    another ack policy is a conflict that no update can fix.
 *  - Server defaults (nats-server 2.9.10, measured; docs/NATS-FACTS.md §4, §5): max_deliver 0 means
 *    unlimited and is reported as -1. A zero ack_wait, max_ack_pending or
 *    max_waiting in config means "the server's default" and is not compared
 *    (the defaults depend on account limits). max_ack_pending -1 (unlimited)
 *    is stored as the default (1000) by 2.9.10, so it is not compared either
 *    and the log line says so. A non-empty backoff makes the server replace
 *    ack_wait with backoff[0]: we expect that value and say so in the log line
 *    when the config asked for something else.
 *  - Editable in place on 2.9.10 (measured): description, ack_wait, max_deliver,
 *    backoff, max_ack_pending, filter_subject. Not editable: deliver_policy and
 *    max_waiting (error 10012), ack policy and push/pull.
 *  - Units: config ms, jsConsumerConfig ns (AckWait, BackOff[]).
 *  - A partitioned group (partitions > 0) is provisioned as its durables, one by one
 *    (gf_config_consumer_partition names them).
 *  - A consumer that disappeared while a function ran is recreated by the endpoint from
 *    the position it last saw (gf__provision_consumer_at: deliver by_start_sequence),
 *    never from the start of a stream it has already worked through. The compare then
 *    accepts by_start_sequence on the server for any configured deliver policy.
 */
#include "gamefn/provision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/names.h"
#include "nats/nats_err.h"
#include "provision/provision_consumer.h"
#include "provision_diff.h"

enum { PROV_MAX_BACKOFF = 64 };

static const jsDeliverPolicy deliver_map[] = {js_DeliverAll, js_DeliverNew, js_DeliverLast};

static gf_err consumer_validate(const gf_consumer_config *c, const char *asset,
                                gf_provision_result *res)
{
    char why[GF_NAME_WHY_MAX];
    if (!gf_name_asset_ok(c->stream, why, sizeof why)) {
        gf__prov_message(res, "%s: stream name %s", asset, why);
        return GF_ERR_INVALID;
    }
    if (!gf_name_asset_ok(c->name, why, sizeof why)) {
        gf__prov_message(res, "%s: durable name %s", asset, why);
        return GF_ERR_INVALID;
    }
    if (c->filter_subject != NULL && c->filter_subject[0] != '\0' &&
        !gf_name_subject_ok(c->filter_subject, true, why, sizeof why)) {
        gf__prov_message(res, "%s: filter_subject %s", asset, why);
        return GF_ERR_INVALID;
    }
    if (c->deliver < GF_DELIVER_ALL || c->deliver > GF_DELIVER_LAST) {
        gf__prov_message(res, "%s: deliver policy %d out of range", asset, c->deliver);
        return GF_ERR_INVALID;
    }
    if (!gf__prov_ms_ok(c->ack_wait_ms)) {
        gf__prov_message(res, "%s: ack_wait must be >= 0 and fit in int64 nanoseconds", asset);
        return GF_ERR_INVALID;
    }
    if (c->max_deliver < -1 || c->max_ack_pending < -1 || c->max_waiting < 0) {
        gf__prov_message(res,
                         "%s: max_deliver and max_ack_pending must be >= -1, max_waiting "
                         ">= 0",
                         asset);
        return GF_ERR_INVALID;
    }
    if (c->backoff_ms_len > PROV_MAX_BACKOFF || (c->backoff_ms_len > 0 && c->backoff_ms == NULL)) {
        gf__prov_message(res, "%s: backoff must have at most %d entries", asset, PROV_MAX_BACKOFF);
        return GF_ERR_INVALID;
    }
    for (size_t i = 0; i < c->backoff_ms_len; i++) {
        if (c->backoff_ms[i] <= 0 || !gf__prov_ms_ok(c->backoff_ms[i])) {
            gf__prov_message(res, "%s: backoff[%zu] must be > 0", asset, i);
            return GF_ERR_INVALID;
        }
    }
    /* The server refuses this too, but a local message is clearer. */
    if (c->backoff_ms_len > 0 && c->max_deliver != -1 && c->max_deliver != 0 &&
        c->max_deliver <= (int64_t)c->backoff_ms_len) {
        gf__prov_message(res, "%s: max_deliver %lld must be larger than the %zu backoff entries",
                         asset, (long long)c->max_deliver, c->backoff_ms_len);
        return GF_ERR_INVALID;
    }
    return GF_OK;
}

/* What the server reports for a consumer created from `c`. `backoff` holds
 * backoff_ms_len ns values; other pointers borrow `c`. */
static void consumer_expected(const gf_consumer_config *c, int64_t *backoff, jsConsumerConfig *w)
{
    jsConsumerConfig_Init(w);
    w->Durable = c->name;
    w->Description = c->description;
    w->DeliverPolicy = deliver_map[c->deliver];
    w->AckPolicy = c->ack_policy == GF_ACK_ALL ? js_AckAll : js_AckExplicit;
    w->FilterSubject = (c->filter_subject && c->filter_subject[0]) ? c->filter_subject : NULL;
    for (size_t i = 0; i < c->backoff_ms_len; i++)
        backoff[i] = gf__prov_ms_to_ns(c->backoff_ms[i]);
    w->BackOff = c->backoff_ms_len > 0 ? backoff : NULL;
    w->BackOffLen = (int)c->backoff_ms_len;
    w->AckWait = c->backoff_ms_len > 0 ? backoff[0] : gf__prov_ms_to_ns(c->ack_wait_ms);
    w->MaxDeliver = c->max_deliver != 0 ? c->max_deliver : -1;
    w->MaxAckPending = c->max_ack_pending;
    w->MaxWaiting = c->max_waiting;
}

static void backoff_text(char *buf, size_t size, const int64_t *ns, int len)
{
    size_t n = 0;
    buf[0] = '\0';
    n += (size_t)snprintf(buf + n, size - n, "[");
    for (int i = 0; i < len && n < size; i++) {
        char d[32];
        n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "",
                              gf__prov_fmt_duration(d, sizeof d, ns[i], NULL));
    }
    if (n < size)
        snprintf(buf + n, size - n, "]");
}

static void consumer_compare(const jsConsumerInfo *ci, const jsConsumerConfig *w, gf__prov_diff *d)
{
    const jsConsumerConfig *s = ci->Config;

    if (s->DeliverSubject != NULL && s->DeliverSubject[0] != '\0')
        gf__prov_diff_add(d, false, "deliver_subject", s->DeliverSubject, "none (pull consumer)");
    if (s->AckPolicy != w->AckPolicy)
        gf__prov_diff_add(d, false, "ack_policy", gf__prov_ack_name(s->AckPolicy),
                          gf__prov_ack_name(w->AckPolicy));
    /* A consumer the runtime recreated from a known position (by_start_sequence) stands
     * for the configured one, whatever its deliver policy: it is the same consumer, minus
     * the history it had already handled (gf__provision_consumer_at). */
    bool recreated = s->DeliverPolicy == js_DeliverByStartSequence;
    if (s->DeliverPolicy != w->DeliverPolicy && !recreated)
        gf__prov_diff_add(d, false, "deliver_policy", gf__prov_deliver_name(s->DeliverPolicy),
                          gf__prov_deliver_name(w->DeliverPolicy));
    if (w->MaxWaiting > 0 && s->MaxWaiting != w->MaxWaiting)
        gf__prov_diff_limit(d, false, "max_waiting", s->MaxWaiting, w->MaxWaiting);
    gf__prov_diff_string(d, true, "filter_subject", s->FilterSubject, w->FilterSubject);
    if (w->AckWait > 0)
        gf__prov_diff_duration(d, true, "ack_wait", s->AckWait, w->AckWait, NULL);
    gf__prov_diff_limit(d, true, "max_deliver", s->MaxDeliver, w->MaxDeliver);
    bool same_backoff = s->BackOffLen == w->BackOffLen;
    for (int i = 0; same_backoff && i < w->BackOffLen; i++)
        same_backoff = s->BackOff[i] == w->BackOff[i];
    if (!same_backoff) {
        char a[200], b[200];
        backoff_text(a, sizeof a, s->BackOff, s->BackOffLen);
        backoff_text(b, sizeof b, w->BackOff, w->BackOffLen);
        gf__prov_diff_add(d, true, "backoff", a, b);
    }
    if (w->MaxAckPending > 0)
        gf__prov_diff_limit(d, true, "max_ack_pending", s->MaxAckPending, w->MaxAckPending);
    if (w->Description != NULL)
        gf__prov_diff_string(d, true, "description", s->Description, w->Description);
}

/* A note for the log line when the server keeps something other than what the
 * config says, in ways the compare accepts on purpose. Returns true when it
 * deserves warn level. */
static bool consumer_note(const gf_consumer_config *c, const jsConsumerConfig *w,
                          const jsConsumerConfig *server, char *buf, size_t size)
{
    size_t n = 0;
    bool warn = false;
    buf[0] = '\0';
    if (c->backoff_ms_len > 0 && c->ack_wait_ms != 0 &&
        gf__prov_ms_to_ns(c->ack_wait_ms) != w->AckWait) {
        /* documented behaviour of the server, so only info */
        char a[32], b[32];
        n += (size_t)snprintf(
            buf, size, "ack_wait %s is replaced by backoff[0] %s on the server",
            gf__prov_fmt_duration(a, sizeof a, gf__prov_ms_to_ns(c->ack_wait_ms), NULL),
            gf__prov_fmt_duration(b, sizeof b, w->AckWait, NULL));
    }
    if (c->max_ack_pending < 0 && server != NULL && server->MaxAckPending >= 0 && n < size) {
        snprintf(buf + n, size - n,
                 "%smax_ack_pending unlimited (-1) is not supported by this "
                 "server, it uses %lld",
                 n ? "; " : "", (long long)server->MaxAckPending);
        warn = true;
    }
    return warn;
}

static gf_err consumer_apply(jsCtx *js, const gf_consumer_config *cfg, uint64_t start_seq,
                             const char *asset, bool update, gf_provision_result *res, bool *warn)
{
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    jsConsumerConfig want;
    int64_t backoff[PROV_MAX_BACKOFF];
    gf__prov_diff diff;
    gf_err err = GF_OK;
    natsStatus s;

    consumer_expected(cfg, backoff, &want);

    s = js_GetConsumerInfo(&ci, js, cfg->stream, cfg->name, NULL, &jerr);
    if (s != NATS_OK && jerr == JSStreamNotFoundErr) {
        gf__prov_message(res, "%s: stream %s does not exist (streams are provisioned first)", asset,
                         cfg->stream);
        err = GF_ERR_NOT_FOUND;
        goto out;
    }
    if (s != NATS_OK && (s == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr)) {
        jsConsumerConfig create = want;
        create.AckWait = gf__prov_ms_to_ns(cfg->ack_wait_ms); /* as configured; see notes */
        if (start_seq > 0) {
            create.DeliverPolicy = js_DeliverByStartSequence;
            create.OptStartSeq = start_seq;
        }
        jerr = 0;
        s = js_AddConsumer(&ci, js, cfg->stream, &create, NULL, &jerr);
        if (s == NATS_OK) {
            gf__prov_diff_init(&diff);
            consumer_compare(ci, &want, &diff);
            *warn = gf__prov_created(&diff, asset, res);
            goto out;
        }
        /* Lost a race with another creator, or the server refused: read again
         * to tell which. */
        natsStatus add_status = s;
        jsErrCode add_jerr = jerr;
        char add_text[256];
        snprintf(add_text, sizeof add_text, "%s", gf__prov_nats_text(s));
        jerr = 0;
        s = js_GetConsumerInfo(&ci, js, cfg->stream, cfg->name, NULL, &jerr);
        if (s != NATS_OK) {
            gf__prov_message(res, "%s: create failed: %s", asset, add_text);
            err = gf__nats_js_err(add_status, add_jerr);
            goto out;
        }
    }
    if (s != NATS_OK) {
        gf__prov_message(res, "%s: cannot read consumer info: %s", asset, gf__prov_nats_text(s));
        err = gf__nats_js_err(s, jerr);
        goto out;
    }

    gf__prov_diff_init(&diff);
    consumer_compare(ci, &want, &diff);
    if (gf__prov_diff_empty(&diff)) {
        res->outcome = GF_PROVISION_UNCHANGED;
        goto out;
    }
    gf__prov_diff_message(&diff, asset, update, res->message, sizeof res->message);
    if (!update || diff.nfixed > 0) {
        err = GF_ERR_CONFLICT;
        goto out;
    }

    jsConsumerConfig up = *ci->Config;
    up.Description = want.Description ? want.Description : ci->Config->Description;
    up.FilterSubject = want.FilterSubject;
    if (want.AckWait > 0)
        up.AckWait = want.AckWait;
    up.MaxDeliver = want.MaxDeliver;
    up.BackOff = want.BackOff;
    up.BackOffLen = want.BackOffLen;
    if (want.MaxAckPending > 0)
        up.MaxAckPending = want.MaxAckPending;
    jsConsumerInfo *after = NULL;
    jerr = 0;
    s = js_UpdateConsumer(&after, js, cfg->stream, &up, NULL, &jerr);
    if (s == NATS_OK) {
        /* Trust but verify: what the server now reports must match. */
        gf__prov_diff_init(&diff);
        consumer_compare(after, &want, &diff);
    }
    jsConsumerInfo_Destroy(after);
    err = gf__prov_update_result(s, jerr, &diff, asset, res);
out:
    if (err == GF_OK && res->message[0] == '\0' &&
        consumer_note(cfg, &want, ci ? ci->Config : NULL, res->message, sizeof res->message))
        *warn = true;
    jsConsumerInfo_Destroy(ci);
    return err;
}

static gf_err provision_one(jsCtx *js, const gf_consumer_config *cfg, uint64_t start_seq,
                            bool update, gf_provision_result *res)
{
    char asset[600];
    bool warn = false;
    gf_err err;

    res = gf__prov_begin(res, res);
    snprintf(asset, sizeof asset, "consumer %s/%s", cfg && cfg->stream ? cfg->stream : "(null)",
             cfg && cfg->name ? cfg->name : "(null)");
    if (js == NULL || cfg == NULL) {
        gf__prov_message(res, "consumer: no JetStream context or config");
        err = GF_ERR_INVALID;
    } else {
        err = consumer_validate(cfg, asset, res);
        if (err == GF_OK)
            err = consumer_apply(js, cfg, start_seq, asset, update, res, &warn);
    }
    gf__prov_report("consumer", asset + strlen("consumer "), err, res->outcome, warn, res);
    return err;
}

/* A partitioned group: each of its durables in turn, stopping at the first failure.
 * The outcome is the strongest of them (created > updated > unchanged). */
static gf_err provision_group(jsCtx *js, const gf_consumer_config *group, bool update,
                              gf_provision_result *res)
{
    gf_provision_outcome outcome = GF_PROVISION_UNCHANGED;
    for (unsigned p = 0; p < (unsigned)group->partitions; p++) {
        gf_consumer_config one;
        gf_partition_names names;
        if (gf_config_consumer_partition(group, p, &one, &names) != GF_OK) {
            gf__prov_begin(res, res);
            gf__prov_message(res, "consumer group %s/%s: partition %u has no valid name",
                             group->stream, group->name, p);
            return GF_ERR_INVALID;
        }
        gf_err err = provision_one(js, &one, 0, update, res);
        if (err != GF_OK)
            return err;
        if (res->outcome == GF_PROVISION_CREATED ||
            (res->outcome == GF_PROVISION_UPDATED && outcome == GF_PROVISION_UNCHANGED))
            outcome = res->outcome;
    }
    res->outcome = outcome;
    return GF_OK;
}

gf_err gf_provision_consumer(jsCtx *js, const gf_consumer_config *cfg, bool update,
                             gf_provision_result *res)
{
    gf_provision_result local;
    if (res == NULL)
        res = &local;
    if (js != NULL && cfg != NULL && cfg->partitions > 0)
        return provision_group(js, cfg, update, res);
    return provision_one(js, cfg, 0, update, res);
}

gf_err gf__provision_consumer_at(jsCtx *js, const gf_consumer_config *cfg, uint64_t start_seq,
                                 gf_provision_result *res)
{
    gf_provision_result local;
    return provision_one(js, cfg, start_seq, false, res ? res : &local);
}
