/*
 * gamefn — the operator's command line (docs/OPERATIONS.md, "The gamefn CLI").
 *
 *   gamefn [--config FILE] [--inbox-prefix P] [--connect-timeout D] <command> [options]
 *   gamefn --version
 *
 * Adding a command: one row in `commands` below (name, summary, help text, function,
 * which config it needs) and its file in tools/CMakeLists.txt. The NATS URL comes from
 * the config or GAMEFN_NATS_URL, like every function.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gamefn/log.h"

static int keygen(gf_cli *cli, int argc, char **argv)
{
    return gf_cli_keygen(argc, argv);
}

static int verify_token(gf_cli *cli, int argc, char **argv)
{
    return gf_cli_verify_token(cli->config_path, argc, argv);
}

static const gf_cli_command commands[] = {
    /* name, summary, help, run, config */
    {"check-config", "validate the configuration, every function's section included",
     gf_cli_check_config_help, gf_cli_check_config, GF_CLI_CONFIG_ALL},
    {"provision", "create or verify every stream, bucket and consumer in the config",
     gf_cli_provision_help, gf_cli_provision, GF_CLI_CONFIG_RUNTIME},
    {"services", "list running function instances and their request counters", gf_cli_services_help,
     gf_cli_services, GF_CLI_CONFIG_RUNTIME},
    {"status", "functions with their health and stats, streams, consumers with their lag",
     gf_cli_status_help, gf_cli_status, GF_CLI_CONFIG_RUNTIME},
    {"ticket", "create, get, cancel or watch a matchmaking ticket", gf_cli_ticket_help,
     gf_cli_ticket, GF_CLI_CONFIG_RUNTIME},
    {"check", "recompute every invariant from what the deployment recorded", gf_cli_check_help,
     gf_cli_check, GF_CLI_CONFIG_RUNTIME},
    {"emit", "emit game events through the producer library (spooled, then published)",
     gf_cli_emit_help, gf_cli_emit, GF_CLI_CONFIG_RUNTIME},
    {"lb", "leaderboard queries: top, a page, around a player, a player's rank", gf_cli_lb_help,
     gf_cli_lb, GF_CLI_CONFIG_RUNTIME},
    {"history", "a player's events from the event log, in order", gf_cli_history_help,
     gf_cli_history, GF_CLI_CONFIG_RUNTIME},
    {"dlq", "dead letters: list, show, re-drive", gf_cli_dlq_help, gf_cli_dlq,
     GF_CLI_CONFIG_RUNTIME},
    {"lag", "every event consumer's lag and level, and lost events (gaps)", gf_cli_lag_help,
     gf_cli_lag, GF_CLI_CONFIG_RUNTIME},
    {"analytics", "event counts of a time range by type, datacenter or queue",
     gf_cli_analytics_help, gf_cli_analytics, GF_CLI_CONFIG_RUNTIME},
    {"crashes", "crash fingerprints by count, or one in detail", gf_cli_crashes_help,
     gf_cli_crashes, GF_CLI_CONFIG_RUNTIME},
    {"keygen", "make a join-token signing key pair (secret file mode 0600)", gf_cli_keygen_help,
     keygen, GF_CLI_CONFIG_NONE},
    {"verify-token", "check a join token like a game server: signature, time, server, player",
     gf_cli_verify_token_help, verify_token, GF_CLI_CONFIG_NONE},
};
enum { NCOMMANDS = sizeof commands / sizeof commands[0] };

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn [--config FILE] [--inbox-prefix PREFIX] [--connect-timeout D]\n"
               "              <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n"
               "  --config FILE          defaults to $GAMEFN_CONFIG, else config/gamefn.yaml\n"
               "  --inbox-prefix PREFIX  reply subjects of this client (e.g. _INBOX.gw for the\n"
               "                         gateway user); default: the config's nats.inbox_prefix\n"
               "  --connect-timeout D    give up connecting to NATS after D (default 5s)\n"
               "  --version              print the release and exit\n"
               "\n`gamefn <command> --help` describes a command. Exit codes: 0 ok, 1 check found\n"
               "a broken invariant, 2 usage, 3 NATS unreachable, 4 unknown name, 5 timeout, 6 no\n"
               "function serves the request, 7 refused, 8 other failure.\n");
}

static const gf_cli_command *find(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    }
    return NULL;
}

static bool wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return false;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"inbox-prefix", required_argument, NULL, 'i'},
        {"connect-timeout", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'v'},
        {NULL, 0, NULL, 0},
    };
    gf_cli cli = {.connect_timeout_ms = 5000};
    cli.config_path = getenv("GAMEFN_CONFIG");
    if (!cli.config_path || !cli.config_path[0])
        cli.config_path = "config/gamefn.yaml";
    int c;
    /* "+": stop at the command; the options after it are the command's own. */
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            cli.config_path = optarg;
            break;
        case 'i':
            cli.inbox_prefix = optarg;
            break;
        case 't':
            if (!gf_cli_duration("", "--connect-timeout", optarg, 1, 600000,
                                 &cli.connect_timeout_ms))
                return GF_CLI_USAGE;
            break;
        case 'h':
            usage(stdout);
            return GF_CLI_OK;
        case 'v': /* the release; each function's --version gives its own */
            printf("gamefn %s\n", GAMEFN_RELEASE);
            return GF_CLI_OK;
        default:
            usage(stderr);
            return GF_CLI_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return GF_CLI_USAGE;
    }
    int i = optind;
    const gf_cli_command *cmd = find(argv[i]);
    if (!cmd) {
        fprintf(stderr, "gamefn: unknown command '%s'\n", argv[i]);
        usage(stderr);
        return GF_CLI_USAGE;
    }
    if (wants_help(argc - i, argv + i)) {
        fputs(cmd->help, stdout);
        return GF_CLI_OK;
    }
    gf_log_init("gamefn", GF_LOG_WARN);
    if (cmd->config != GF_CLI_CONFIG_NONE) {
        gf_config_error err;
        size_t nfunctions = 0;
        const gf_config_section *functions = gf_cli_functions(&nfunctions);
        gf_err loaded =
            cmd->config == GF_CLI_CONFIG_ALL
                ? gf_config_load_all(cli.config_path, functions, nfunctions, &cli.cfg, &err)
                : gf_config_load(cli.config_path, NULL, &cli.cfg, &err);
        if (loaded != GF_OK) {
            fprintf(stderr, "gamefn: %s\n", err.message);
            return GF_CLI_USAGE;
        }
        gf_log_set_level(cli.cfg->log.level > GF_LOG_WARN ? (gf_log_level)cli.cfg->log.level
                                                          : GF_LOG_WARN);
    }
    int code = cmd->run(&cli, argc - i, argv + i);
    gf_config_free(cli.cfg);
    return code;
}
