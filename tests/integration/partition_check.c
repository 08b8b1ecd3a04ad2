/* partition_check.c — see partition_check.h. */
#include "partition_check.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"

char *const pc_env[] = {"GAMEFN_TEST_MODE=partitioned", NULL};

void pc_opts(gf_fnenv_opts *o, int nodes, const char *functions)
{
    static char streams[256];
    snprintf(streams, sizeof streams,
             "    - name: TEST_EVENTS\n"
             "      subjects: [\"test.evp.>\"]\n"
             "      replicas: %d\n",
             nodes > 1 ? nodes : 1);
    memset(o, 0, sizeof *o);
    o->nodes = nodes;
    o->server_config = "mappings {\n"
                       "  \"test.ev.*\": \"test.evp.{{partition(16,1)}}.{{wildcard(1)}}\"\n"
                       "}\n";
    o->runtime = "  drain_timeout: 5s\n"
                 "  fetch_batch: 16\n"
                 "  max_in_flight: 8\n"
                 "  fetch_expiry: 1s\n"
                 "  heartbeat: 250ms\n";
    o->streams = streams;
    o->consumers = "    - stream: TEST_EVENTS\n"
                   "      name: tp\n"
                   "      partitions: 16\n"
                   "      filter_subject: \"test.evp.{partition}.>\"\n"
                   "      lease_ttl: 3s\n"
                   "      ack_wait: 2s\n"
                   "      max_deliver: 5\n";
    o->functions = functions;
}

static int parse_batch(char *line, pc_records *r)
{
    pc_batch b = {0};
    long long start = 0, end = 0;
    unsigned long long token = 0;
    int used = 0;
    if (sscanf(line, "%u %llu %31s %lld %lld%n", &b.partition, &token, b.instance, &start, &end,
               &used) != 5)
        return -1;
    b.token = token;
    b.start_us = start;
    b.end_us = end;
    b.first = r->nevents;
    char *save = NULL;
    for (char *tok = strtok_r(line + used, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        pc_event e = {0};
        if (sscanf(tok, "k%d:%d", &e.key, &e.n) != 2)
            continue; /* poison and the like: not part of the keyed sequences */
        pc_event *grown = realloc(r->events, (r->nevents + 1) * sizeof *grown);
        if (!grown)
            return -1;
        r->events = grown;
        r->events[r->nevents++] = e;
        b.count++;
    }
    pc_batch *grown = realloc(r->batches, (r->nbatches + 1) * sizeof *grown);
    if (!grown)
        return -1;
    r->batches = grown;
    r->batches[r->nbatches++] = b;
    return 0;
}

int pc_read(gf_fnenv *env, pc_records *r)
{
    gf_lines lines;
    memset(r, 0, sizeof *r);
    if (gf_fnenv_results(env, "test.results.batches", &lines) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < lines.count && rc == 0; i++)
        rc = parse_batch(lines.lines[i], r);
    gf_fnenv_lines_free(&lines);
    return rc;
}

void pc_free(pc_records *r)
{
    free(r->batches);
    free(r->events);
    memset(r, 0, sizeof *r);
}

static const pc_records *sort_records;

static int by_start(const void *a, const void *b)
{
    const pc_batch *x = &sort_records->batches[*(const size_t *)a];
    const pc_batch *y = &sort_records->batches[*(const size_t *)b];
    return x->start_us < y->start_us ? -1 : x->start_us > y->start_us;
}

void pc_check_one_owner(const pc_records *r)
{
    size_t *idx = calloc(r->nbatches + 1, sizeof *idx);
    assert_non_null(idx);
    for (unsigned p = 0; p < PC_PARTITIONS; p++) {
        size_t n = 0;
        for (size_t i = 0; i < r->nbatches; i++) {
            if (r->batches[i].partition == p)
                idx[n++] = i;
        }
        sort_records = r;
        qsort(idx, n, sizeof *idx, by_start);
        for (size_t k = 1; k < n; k++) {
            const pc_batch *a = &r->batches[idx[k - 1]], *b = &r->batches[idx[k]];
            bool other = strcmp(a->instance, b->instance) != 0;
            if (b->start_us < a->end_us)
                fail_msg("partition %u: %s (token %llu) started at %lld while %s (token %llu) "
                         "ran until %lld",
                         p, b->instance, (unsigned long long)b->token, (long long)b->start_us,
                         a->instance, (unsigned long long)a->token, (long long)a->end_us);
            if (b->token < a->token || (other && b->token == a->token))
                fail_msg("partition %u: token %llu of %s after token %llu of %s", p,
                         (unsigned long long)b->token, b->instance, (unsigned long long)a->token,
                         a->instance);
        }
    }
    free(idx);
}

void pc_check_order(const pc_records *r, int keys, int per_key, bool allow_replays, size_t *replays)
{
    int *max = calloc((size_t)keys, sizeof *max);
    assert_non_null(max);
    *replays = 0;
    for (size_t i = 0; i < r->nevents; i++) {
        const pc_event *e = &r->events[i];
        if (e->key < 0 || e->key >= keys)
            fail_msg("unexpected key k%d", e->key);
        if (e->n == max[e->key] + 1) {
            max[e->key] = e->n;
        } else if (e->n <= max[e->key]) {
            ++*replays;
            if (!allow_replays)
                fail_msg("key k%d: event %d handled again after %d", e->key, e->n, max[e->key]);
        } else {
            fail_msg("key k%d: event %d handled before event %d (out of order)", e->key, e->n,
                     max[e->key] + 1);
        }
    }
    for (int k = 0; k < keys; k++) {
        if (max[k] != per_key)
            fail_msg("key k%d: handled up to %d of %d", k, max[k], per_key);
    }
    free(max);
}

int pc_owners(gf_fnenv *env, char owner[PC_PARTITIONS][PC_INSTANCE_MAX])
{
    kvStore *kv = NULL;
    if (js_KeyValue(&kv, env->js, "leases") != NATS_OK)
        return -1;
    int64_t now = gf_clock_unix_ms();
    for (unsigned p = 0; p < PC_PARTITIONS; p++) {
        char key[64];
        kvEntry *e = NULL;
        owner[p][0] = '\0';
        snprintf(key, sizeof key, "part.tp.%02u", p);
        if (kvStore_Get(&e, kv, key) != NATS_OK)
            continue;
        long long expires = 0;
        char holder[128] = "";
        if (sscanf(kvEntry_ValueString(e), "%lld %127s", &expires, holder) == 2 && expires > now) {
            char *dot = strrchr(holder, '.'); /* "<instance>.<nonce>" */
            if (dot)
                *dot = '\0';
            snprintf(owner[p], PC_INSTANCE_MAX, "%s", holder);
        }
        kvEntry_Destroy(e);
    }
    kvStore_Destroy(kv);
    return 0;
}

int pc_count(char owner[PC_PARTITIONS][PC_INSTANCE_MAX], const char *instance)
{
    int n = 0;
    for (unsigned p = 0; p < PC_PARTITIONS; p++)
        n += strcmp(owner[p], instance) == 0;
    return n;
}

static void *publisher(void *arg)
{
    pc_publisher *p = arg;
    for (int n = 1; n <= p->per_key; n++) {
        for (int k = 0; k < p->keys; k++) {
            char subject[64], data[16], id[64];
            snprintf(subject, sizeof subject, "test.ev.k%d", k);
            snprintf(data, sizeof data, "%d", n);
            snprintf(id, sizeof id, "k%d-%d", k, n);
            jsPubOptions po;
            jsPubOptions_Init(&po);
            po.MsgId = id; /* a retry that did land is stored once */
            po.MaxWait = 2000;
            int attempt = 0;
            while (js_Publish(NULL, p->env->js, subject, data, (int)strlen(data), &po, NULL) !=
                   NATS_OK) {
                if (++attempt > 100) {
                    p->failed = 1;
                    return NULL;
                }
                gf_clock_sleep_ms(100);
            }
        }
        p->published = n;
        gf_clock_sleep_ms(p->pause_ms);
    }
    return NULL;
}

void pc_publish_start(pc_publisher *p)
{
    p->published = 0;
    p->failed = 0;
    assert_int_equal(pthread_create(&p->thread, NULL, publisher, p), 0);
}

void pc_publish_join(pc_publisher *p)
{
    pthread_join(p->thread, NULL);
    assert_int_equal(p->failed, 0);
}

struct all_arg {
    int keys, per_key;
};

static bool all_handled(gf_fnenv *env, void *arg)
{
    struct all_arg *a = arg;
    pc_records r;
    if (pc_read(env, &r) != 0)
        return false;
    size_t need = (size_t)a->keys * (size_t)a->per_key, got = 0;
    char *seen = calloc(need, 1);
    for (size_t i = 0; seen && i < r.nevents; i++) {
        const pc_event *e = &r.events[i];
        if (e->key >= 0 && e->key < a->keys && e->n >= 1 && e->n <= a->per_key) {
            size_t at = (size_t)e->key * (size_t)a->per_key + (size_t)(e->n - 1);
            got += !seen[at];
            seen[at] = 1;
        }
    }
    free(seen);
    pc_free(&r);
    return got == need;
}

bool pc_wait_all_handled(gf_fnenv *env, int keys, int per_key, int timeout_ms)
{
    struct all_arg a = {keys, per_key};
    return gf_fnenv_eventually(all_handled, env, &a, timeout_ms);
}

size_t pc_verify(pc_publisher *pub, bool allow_replays)
{
    pc_records r;
    size_t replays = 0;
    pc_publish_join(pub);
    assert_true(pc_wait_all_handled(pub->env, pub->keys, pub->per_key, 60000));
    assert_int_equal(pc_read(pub->env, &r), 0);
    pc_check_one_owner(&r);
    pc_check_order(&r, pub->keys, pub->per_key, allow_replays, &replays);
    printf("partition_check: %zu batches, %zu events, %zu replays\n", r.nbatches, r.nevents,
           replays);
    pc_free(&r);
    return replays;
}
