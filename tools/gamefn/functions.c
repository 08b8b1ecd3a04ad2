/*
 * functions.c — the registry of the functions' config tables, for `gamefn check-config`.
 *
 * Every function exposes the table of its `functions.<name>` section from its pure
 * library (no NATS), so the CLI can check every section of a file without running the
 * functions. Adding a function: one row in GF_CLI_FUNCTIONS below (its section name and
 * the table's symbol), and its pure library in tools/CMakeLists.txt.
 */
#include "cli.h"

/* X(section name, table symbol) */
#define GF_CLI_FUNCTIONS(X)                                                                        \
    X("echo", echo_config_table)           /* functions/echo/echo.c */                             \
    X("intake", intake_config_table)       /* functions/intake/intake_config.c */                  \
    X("ticker", ticker_config_table)       /* functions/ticker/ticker_config.c */                  \
    X("matcher", gf_mm_config_table)       /* functions/tickets/src/config.c */                    \
    X("fleet", fleet_config_table)         /* functions/fleet/fleet_config.c */                    \
    X("allocator", alloc_config_table)     /* functions/allocator/alloc_config.c */                \
    X("dlq", dlq_config_table)             /* functions/dlq/letter.c */                            \
    X("leaderboard", lb_config_table)      /* functions/leaderboard/lb_config.c */                 \
    X("lag", lag_config_table)             /* functions/lag/lag_config.c */                        \
    X("analytics", analytics_config_table) /* functions/analytics/analytics_config.c */            \
    X("crashes", crashes_config_table)     /* functions/crashes/crashes_config.c */

#define DECLARE(name, table) extern const gf_cfg_table table;
GF_CLI_FUNCTIONS(DECLARE)
#undef DECLARE

#define ROW(name, table) {name, &table},
static const gf_config_section sections[] = {GF_CLI_FUNCTIONS(ROW)};
#undef ROW

const gf_config_section *gf_cli_functions(size_t *n)
{
    *n = sizeof sections / sizeof sections[0];
    return sections;
}
