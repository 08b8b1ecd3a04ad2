/* gamefn-bench — one program, one subcommand per benchmark. */
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
};

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn-bench <subcommand> [options] [--json]\n\nsubcommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(f, "  %-8s %s\n", subcommands[i].name, subcommands[i].help);
    fprintf(f, "\n`gamefn-bench <subcommand> --help` lists its options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++) {
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "gamefn-bench: unknown subcommand '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
