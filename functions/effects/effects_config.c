/*
 * effects_config.c — the shared keys of the effect-reading consumers' sections (see
 * effects_config.h).
 */
#include "effects_config.h"

#include <stdio.h>

#include "gamefn/names.h"

bool gf_effects_bucket_valid(const char *bucket, gf_cfg_problem *p)
{
    char why[GF_NAME_WHY_MAX];
    if (gf_name_bucket_ok(bucket, why, sizeof why))
        return true;
    p->key = "bucket";
    snprintf(p->text, sizeof p->text, "bucket name %s", why);
    return false;
}
