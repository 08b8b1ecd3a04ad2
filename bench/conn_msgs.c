/*
 * bench/conn_msgs.c — nats-server's per-connection message counters by role
 * (conn_msgs.h).
 *
 * Design note: /connz answers at most `limit` connections (1,024 by default); the
 * request asks for 4,096, far above what a benchmark stack opens (a connection per
 * function instance, a few of the benchmark's own), so the sums are over every open
 * connection. Roles beyond GF_BENCH_ROLES_MAX add into the last one, named "other".
 */
#include <stdio.h>
#include <string.h>

#include "conn_msgs.h"

static gf_bench_role_msgs *role_of(gf_bench_conn_msgs *c, const char *name)
{
    char role[GF_BENCH_ROLE_NAME];
    size_t len = name ? strcspn(name, "-") : 0;
    if (len == 0)
        snprintf(role, sizeof role, "bench");
    else
        snprintf(role, sizeof role, "%.*s", (int)len, name);
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->r[i].role, role) == 0)
            return &c->r[i];
    if (c->n == GF_BENCH_ROLES_MAX - 1)
        snprintf(role, sizeof role, "other");
    if (c->n == GF_BENCH_ROLES_MAX)
        return &c->r[GF_BENCH_ROLES_MAX - 1];
    gf_bench_role_msgs *r = &c->r[c->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->role, sizeof r->role, "%s", role);
    return r;
}

int gf_bench_conn_msgs_read(const gf_natsd *srv, gf_bench_conn_msgs *out)
{
    json_t *v = NULL;
    memset(out, 0, sizeof *out);
    if (gf_natsd_monitor_json(srv, "/connz?limit=4096", &v) != 0)
        return -1;
    json_t *conns = json_object_get(v, "connections");
    size_t i;
    json_t *conn;
    json_array_foreach(conns, i, conn)
    {
        gf_bench_role_msgs *r = role_of(out, json_string_value(json_object_get(conn, "name")));
        r->in += json_integer_value(json_object_get(conn, "in_msgs"));
        r->out += json_integer_value(json_object_get(conn, "out_msgs"));
    }
    json_decref(v);
    return 0;
}

static const gf_bench_role_msgs *find(const gf_bench_conn_msgs *c, const char *role)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->r[i].role, role) == 0)
            return &c->r[i];
    return NULL;
}

json_t *gf_bench_conn_msgs_report(const gf_bench_conn_msgs *a, const gf_bench_conn_msgs *b,
                                  long long tickets)
{
    json_t *j = json_object();
    double per = tickets > 0 ? 1.0 / (double)tickets : 0, in_sum = 0, out_sum = 0;
    char line[1024];
    int n = 0;
    line[0] = '\0';
    for (int i = 0; i < b->n; i++) {
        const gf_bench_role_msgs *now = &b->r[i], *then = find(a, now->role);
        double in = (double)(now->in - (then ? then->in : 0)) * per;
        double out = (double)(now->out - (then ? then->out : 0)) * per;
        in_sum += in;
        out_sum += out;
        json_t *o = json_object();
        json_object_set_new(o, "in", json_real(in));
        json_object_set_new(o, "out", json_real(out));
        json_object_set_new(j, now->role, o);
        if (n >= 0 && (size_t)n < sizeof line)
            n += snprintf(line + n, sizeof line - (size_t)n, "%s%s %.2f / %.2f", i ? ", " : "",
                          now->role, in, out);
    }
    fprintf(stderr,
            "e2e: messages per assigned ticket, into the server / out of it, by connection: "
            "%s (sum %.2f / %.2f)\n",
            line, in_sum, out_sum);
    return j;
}
