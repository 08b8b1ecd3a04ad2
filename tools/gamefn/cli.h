/*
 * cli.h — subcommands of the gamefn operator CLI. Each returns a process exit code
 * and parses its own options with getopt_long: argv[0] is the command's name.
 */
#ifndef GAMEFN_CLI_H
#define GAMEFN_CLI_H

#include "gamefn/config.h"

int gf_cli_provision(const gf_config *cfg, int argc, char **argv);

/* The config sections of every function this build knows (functions.c); static. */
const gf_config_section *gf_cli_functions(size_t *n);
int gf_cli_services(const gf_config *cfg, int argc, char **argv);
/* Need no config (verify-token reads `config_path` only for --keys). */
int gf_cli_keygen(int argc, char **argv);
int gf_cli_verify_token(const char *config_path, int argc, char **argv);

#endif
