/*
 * kinds.c — the registry of endpoint kinds: one row per kind.
 *
 * Adding a kind: its enum value, struct and union member in gamefn/endpoint.h; its
 * operations in endpoints/endpoint_<kind>.c as `const gf__endpoint_ops
 * gf__endpoint_<kind>_ops`; and its line below (the declaration and the row).
 */
#include "endpoints/endpoint.h"

extern const gf__endpoint_ops gf__endpoint_request_ops, gf__endpoint_pull_ops,
    gf__endpoint_tick_ops, gf__endpoint_partitioned_ops;

static const struct {
    gf_endpoint_kind kind;
    const gf__endpoint_ops *ops;
} kinds[] = {
    {GF_ENDPOINT_REQUEST, &gf__endpoint_request_ops},
    {GF_ENDPOINT_PULL, &gf__endpoint_pull_ops},
    {GF_ENDPOINT_TICK, &gf__endpoint_tick_ops},
    {GF_ENDPOINT_PARTITIONED, &gf__endpoint_partitioned_ops},
};

const gf__endpoint_ops *gf__endpoint_ops_of(gf_endpoint_kind kind)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (kinds[i].kind == kind)
            return kinds[i].ops;
    }
    return NULL;
}
