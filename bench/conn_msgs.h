/*
 * bench/conn_msgs.h — whose messages the server took: nats-server's per-connection
 * counters (/connz in_msgs and out_msgs) summed by role, between two readings.
 *
 * A role is the connection's name up to its first '-': a function instance names its
 * connection "<function>-<instance id>" (runtime/src/function), so every replica of a
 * function adds into one role. Connections without a name (the benchmark's own load,
 * status subscriber and simulated servers) add into "bench". A connection that closed
 * between the readings is not in the second one: its messages are not counted, which
 * is why the e2e run reads both while every function still runs.
 */
#ifndef GAMEFN_BENCH_CONN_MSGS_H
#define GAMEFN_BENCH_CONN_MSGS_H

#include <jansson.h>

#include "natsd.h"

enum { GF_BENCH_ROLES_MAX = 16, GF_BENCH_ROLE_NAME = 32 };

typedef struct gf_bench_role_msgs {
    char role[GF_BENCH_ROLE_NAME];
    long long in;  /* messages the server received from the role's connections */
    long long out; /* messages the server delivered to them */
} gf_bench_role_msgs;

typedef struct gf_bench_conn_msgs {
    gf_bench_role_msgs r[GF_BENCH_ROLES_MAX];
    int n;
} gf_bench_conn_msgs;

/* Reads /connz of `srv` into *out; 0, or -1 when the server did not answer (then *out
 * is empty). */
int gf_bench_conn_msgs_read(const gf_natsd *srv, gf_bench_conn_msgs *out);

/* The change from `a` to `b` per `tickets`, printed to stderr as one line and returned as
 * {"<role>": {"in": x, "out": y}, ...} (never NULL). */
json_t *gf_bench_conn_msgs_report(const gf_bench_conn_msgs *a, const gf_bench_conn_msgs *b,
                                  long long tickets);

#endif
