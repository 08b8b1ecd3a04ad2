/*
 * config_env.h — private: environment overrides of deployment values, applied to a
 * freshly parsed config before it is handed out (see gamefn/config.h for the list).
 *
 * A variable set to the empty string counts as unset. An invalid value is a
 * GF_ERR_CONFIG whose err->file is the variable's name and err->key the config key it
 * overrides; values are never echoed for URLs and secrets (a URL may embed a password).
 * Reads the environment with getenv(): do not setenv() concurrently.
 */
#ifndef GAMEFN_CONFIG_ENV_H
#define GAMEFN_CONFIG_ENV_H

#include "gamefn/config.h"

gf_err gf__cfg_env_apply(gf_config *cfg, gf_config_error *err);

#endif
