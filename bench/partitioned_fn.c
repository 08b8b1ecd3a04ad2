/*
 * partitioned_fn.c — gamefn-bench-consumer: the function `gamefn-bench partitioned`
 * runs as replicas. One partitioned endpoint on group BENCH_EVENTS/bench whose batch
 * handler does no work of its own: it reports how many messages it was handed (a core
 * publish of "<count> <partition>" on bench.consumer.progress) and returns GF_OK, so the figure is
 * the runtime's own cost — fetch, hand over, ack — on top of the raw rate.
 */
#include <stdio.h>

#include "gamefn/function.h"

static gf_err on_batch(gf_fn *fn, const gf_batch *batch)
{
    char count[24];
    int n = snprintf(count, sizeof count, "%zu %u", batch->len, batch->partition);
    natsConnection_Publish(gf_fn_nats(fn), "bench.consumer.progress", count, n);
    return GF_OK;
}

static const gf_endpoint endpoints[] = {
    {.name = "events",
     .kind = GF_ENDPOINT_PARTITIONED,
     .partitioned = {.stream = "BENCH_EVENTS", .group = "bench", .on_batch = on_batch}},
};

static const gf_function bench_consumer = {
    .name = "bench-consumer",
    .version = "0.1.0",
    .description = "gamefn-bench partitioned: a partitioned consumer that only counts",
    .endpoints = endpoints,
    .endpoints_len = 1,
};

int main(int argc, char **argv)
{
    return gf_function_main(&bench_consumer, argc, argv);
}
