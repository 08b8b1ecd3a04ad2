/*
 * config_env.c — GAMEFN_* environment overrides (see config_env.h).
 *
 * Design notes: overrides replace whole values (GAMEFN_NATS_URL replaces the list, it
 * does not append), so what runs is what one place says. The authentication check
 * runs again afterwards because a variable can create a conflict the file did not
 * have (GAMEFN_NATS_USER next to credentials in the file); the error then names the
 * variable, since that is what the operator has to change.
 */
#include "config_env.h"

#include <stdlib.h>
#include <string.h>

#include "config_arena.h"
#include "config_check.h"
#include "config_error.h"
#include "config_value.h"
#include "gamefn/limits.h"
#include "gamefn/names.h"

typedef struct string_var {
    const char *var;
    const char *key; /* dotted config key, for the message */
    size_t offset;   /* of the const char * in gf_config */
} string_var;

static const string_var auth_vars[] = {
    {"GAMEFN_NATS_CREDS", "nats.credentials", offsetof(gf_config, nats.credentials)},
    {"GAMEFN_NATS_NKEY_SEED", "nats.nkey_seed", offsetof(gf_config, nats.nkey_seed)},
    {"GAMEFN_NATS_USER", "nats.user", offsetof(gf_config, nats.user)},
    {"GAMEFN_NATS_PASSWORD", "nats.password", offsetof(gf_config, nats.password)},
};

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return (v && *v) ? v : NULL;
}

static gf_err nomem(gf_config_error *err, const char *var)
{
    gf__cfg_error_set(err, var, 0, 0, NULL, "out of memory");
    return GF_ERR_NOMEM;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static gf_err apply_servers(gf_config *cfg, const char *value, gf_config_error *err)
{
    static const char *const var = "GAMEFN_NATS_URL";
    size_t n = 1;
    for (const char *p = value; *p; p++)
        n += *p == ',';
    const char **list = gf__cfg_arena_calloc(cfg->arena, n, sizeof(*list));
    if (!list)
        return nomem(err, var);

    const char *p = value;
    for (size_t i = 0; i < n; i++) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && is_space(*a))
            a++;
        while (b > a && is_space(b[-1]))
            b--;
        if (a == b) {
            gf__cfg_error_set(err, var, 0, 0, "nats.servers",
                              "entry %zu of the comma-separated list is empty", i);
            return GF_ERR_CONFIG;
        }
        char *url = gf__cfg_arena_strndup(cfg->arena, a, (size_t)(b - a));
        if (!url)
            return nomem(err, var);
        const char *why = gf__cfg_check_server_url(url);
        if (why) {
            gf__cfg_error_set(err, var, 0, 0, "nats.servers", "entry %zu %s", i, why);
            return GF_ERR_CONFIG;
        }
        list[i] = url;
        p = *end ? end + 1 : end;
    }
    cfg->nats.servers = list;
    cfg->nats.servers_len = n;
    return GF_OK;
}

static gf_err apply_level(gf_config *cfg, const char *value, gf_config_error *err)
{
    const gf_cfg_table *t = gf_config_schema("log");
    const gf_cfg_field *f = NULL;
    cfg_scalar s = {0};
    char why[200];
    for (size_t i = 0; t && i < t->nfields; i++) {
        if (strcmp(t->fields[i].key, "level") == 0)
            f = &t->fields[i];
    }
    if (!f) {
        gf__cfg_error_set(err, "GAMEFN_LOG_LEVEL", 0, 0, "log.level", "internal: no log.level row");
        return GF_ERR_CONFIG;
    }
    if (!gf__cfg_value_parse(f, GF_CFG_ENUM, value, &s, why, sizeof(why))) {
        gf__cfg_error_set(err, "GAMEFN_LOG_LEVEL", 0, 0, "log.level", "%s", why);
        return GF_ERR_CONFIG;
    }
    cfg->log.level = s.e;
    return GF_OK;
}

gf_err gf__cfg_env_apply(gf_config *cfg, gf_config_error *err)
{
    const char *v = NULL;
    const char *auth_var = NULL; /* first authentication variable applied */
    gf_err rc = GF_OK;

    if ((v = env("GAMEFN_NATS_URL")) != NULL && (rc = apply_servers(cfg, v, err)) != GF_OK)
        return rc;
    for (size_t i = 0; i < sizeof(auth_vars) / sizeof(auth_vars[0]); i++) {
        if ((v = env(auth_vars[i].var)) == NULL)
            continue;
        char *copy = gf__cfg_arena_strdup(cfg->arena, v);
        if (!copy)
            return nomem(err, auth_vars[i].var);
        memcpy((unsigned char *)cfg + auth_vars[i].offset, &copy, sizeof(copy));
        if (!auth_var)
            auth_var = auth_vars[i].var;
    }
    if ((v = env("GAMEFN_LOG_LEVEL")) != NULL && (rc = apply_level(cfg, v, err)) != GF_OK)
        return rc;
    if ((v = env("GAMEFN_INSTANCE_ID")) != NULL) {
        char why[GF_NAME_WHY_MAX];
        if (!gf_name_id_ok(v, GF_WIRE_ID_MAX, why, sizeof why)) {
            gf__cfg_error_set(err, "GAMEFN_INSTANCE_ID", 0, 0, "runtime.instance_id",
                              "instance id %s", why);
            return GF_ERR_CONFIG;
        }
        if (!(cfg->runtime.instance_id = gf__cfg_arena_strdup(cfg->arena, v)))
            return nomem(err, "GAMEFN_INSTANCE_ID");
    }
    if (auth_var) {
        gf_cfg_problem p;
        memset(&p, 0, sizeof(p));
        if (!gf__cfg_check_nats_auth(&cfg->nats, &p)) {
            char key[64] = "nats";
            if (p.key) {
                strcat(key, ".");
                strncat(key, p.key, sizeof(key) - 6);
            }
            gf__cfg_error_set(err, auth_var, 0, 0, key, "%s (after environment overrides)", p.text);
            return GF_ERR_CONFIG;
        }
    }
    return GF_OK;
}
