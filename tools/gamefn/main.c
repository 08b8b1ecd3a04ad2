/*
 * gamefn — the operator's command line.
 *
 *   gamefn [--config FILE] check-config      validate the configuration, every
 *                                            functions.<name> section included
 *   gamefn [--config FILE] provision [--update]
 *                                            create or verify every stream, bucket and
 *                                            consumer in config; conflicts are reported
 *   gamefn [--config FILE] services [--wait MS]
 *                                            list running function instances ($SRV.STATS)
 *   gamefn keygen [--key-id ID] [--dir DIR]  make the join-token key pair (keys_cmd.c)
 *   gamefn [--config FILE] verify-token ...  check a join token like a game server does
 *
 * The NATS URL comes from config or GAMEFN_NATS_URL, like every function.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gamefn/config.h"
#include "gamefn/log.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn [--config FILE] <command> [options]\n\n"
               "commands:\n"
               "  check-config          validate the configuration file, every function's\n"
               "                        section included\n"
               "  provision [--update]  create/verify streams, buckets and consumers from config\n"
               "  services [--wait MS]  list running function instances and their stats\n"
               "  keygen [--key-id ID] [--dir DIR]\n"
               "                        make a join-token key pair (secret file mode 0600)\n"
               "  verify-token (--public-key FILE | --keys) (--token HEX | --token-file FILE)\n"
               "               [--server ID] [--player ID] [--now UNIX_MS]\n"
               "                        check a join token: signature, time, server, player\n\n"
               "--config defaults to $GAMEFN_CONFIG, else config/gamefn.yaml.\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = getenv("GAMEFN_CONFIG");
    if (!path || !path[0])
        path = "config/gamefn.yaml";
    int c;
    /* "+": stop at the command; the options after it are the command's own. */
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            path = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    int i = optind;
    const char *cmd = argv[i];
    gf_log_init("gamefn", GF_LOG_INFO);
    if (strcmp(cmd, "keygen") == 0)
        return gf_cli_keygen(argc - i, argv + i);
    if (strcmp(cmd, "verify-token") == 0)
        return gf_cli_verify_token(path, argc - i, argv + i);

    gf_config *cfg = NULL;
    gf_config_error err;
    size_t nfunctions = 0;
    const gf_config_section *functions = gf_cli_functions(&nfunctions);
    gf_err loaded = strcmp(cmd, "check-config") == 0
                        ? gf_config_load_all(path, functions, nfunctions, &cfg, &err)
                        : gf_config_load(path, NULL, &cfg, &err);
    if (loaded != GF_OK) {
        fprintf(stderr, "gamefn: %s\n", err.message);
        return 2;
    }
    gf_log_set_level((gf_log_level)cfg->log.level);
    int code;
    if (strcmp(cmd, "check-config") == 0) {
        printf("%s: ok (%zu streams, %zu buckets, %zu consumers; functions known:", path,
               cfg->jetstream.streams_len, cfg->jetstream.buckets_len,
               cfg->jetstream.consumers_len);
        for (size_t f = 0; f < nfunctions; f++)
            printf(" %s%s", functions[f].name, f + 1 < nfunctions ? "," : ")\n");
        code = 0;
    } else if (strcmp(cmd, "provision") == 0) {
        code = gf_cli_provision(cfg, argc - i, argv + i);
    } else if (strcmp(cmd, "services") == 0) {
        code = gf_cli_services(cfg, argc - i, argv + i);
    } else {
        fprintf(stderr, "gamefn: unknown command '%s'\n", cmd);
        usage(stderr);
        code = 2;
    }
    gf_config_free(cfg);
    return code;
}
