/*
 * config_yaml.c — gf_match_config_parse(): a `matchmaking:` YAML fragment into a
 * prepared gf_match_config, through the runtime's table-driven parser.
 *
 * Design notes: kept in its own file so that programs building configs in code (the
 * benchmark, most tests) do not pull in the YAML parser. The runtime parser reports
 * per-key problems with file:line:column and runs the tables' validate hooks; the final
 * prepare only derives teams/team_size (its check cannot fail after the hooks passed,
 * but its message is forwarded if it ever does).
 */
#include <stdio.h>
#include <string.h>

#include "gamefn/match/config.h"

gf_err gf_match_config_parse(const char *name, const char *yaml, size_t len, gf_match_config *out,
                             struct gf_config_arena **arena_out, gf_config_error *err)
{
    gf_match_config cfg;
    struct gf_config_arena *arena = NULL;
    char why[256];

    if (!out || !arena_out)
        return GF_ERR_INVALID;
    *arena_out = NULL;
    memset(&cfg, 0, sizeof cfg);
    gf_err rc = gf_config_parse_table(name, yaml, len, &gf_match_config_table, &cfg, &arena, err);
    if (rc != GF_OK)
        return rc;
    if (gf_match_config_prepare(&cfg, why, sizeof why) != GF_OK) {
        if (err) {
            memset(err, 0, sizeof *err);
            snprintf(err->file, sizeof err->file, "%s", name ? name : "<string>");
            snprintf(err->text, sizeof err->text, "%s", why);
            snprintf(err->message, sizeof err->message, "%s: %s", err->file, why);
        }
        gf_config_arena_free(arena);
        return GF_ERR_CONFIG;
    }
    *out = cfg;
    *arena_out = arena;
    return GF_OK;
}
