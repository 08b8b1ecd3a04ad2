/* gamefn-bench — one program, one subcommand per benchmark. */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
};

static const struct subcommand subcommands[] = {
    {"raw", gf_bench_raw, "raw JetStream, KV and request/reply rates of a fresh nats-server"},
    {"match", gf_bench_match, "one matchmaking tick over a synthetic pool"},
    {"partitioned", gf_bench_partitioned, "events/s through a partitioned consumer vs raw"},
    {"intake", gf_bench_intake, "ticket.create requests per second through intake replicas"},
    {"events", gf_bench_events,
     "game events: producer to applied leaderboard effect vs raw, latency, catch-up"},
    {"service", gf_bench_service,
     "intake, ticker and matchers: tickets claimed per second, time to match"},
    {"producer", gf_bench_producer, "events/s through the event producer library vs raw publish"},
    {"alloc", gf_bench_alloc,
     "allocation: Match published -> tickets ASSIGNED, with simulated servers"},
    {"lag", gf_bench_lag, "the lag monitor's cost: consumer info, a poll, the gap observer"},
    {"e2e", gf_bench_e2e,
     "the whole service with simulated servers: tickets/s submit -> ASSIGNED, invariants"},
    {"check", gf_bench_check, "gamefn check over a history of N tickets vs a raw read"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn-bench <subcommand> [options] [--json]\n\nsubcommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(f, "  %-12s %s\n", subcommands[i].name, subcommands[i].help);
    fprintf(f, "\n`gamefn-bench <subcommand> --help` lists its options.\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    /* "+": stop at the subcommand; its options are its own. */
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 0;
        }
        usage(stderr);
        return 2;
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[optind];
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++) {
        if (strcmp(name, subcommands[i].name) == 0)
            return subcommands[i].run(argc - optind, argv + optind);
    }
    fprintf(stderr, "gamefn-bench: unknown subcommand '%s'\n", name);
    usage(stderr);
    return 2;
}
