/*
 * gamefn/match/rules.h — the rule curves and a ticket's limits at a given age.
 *
 * These are the formulas of the issue, verbatim (t = age in seconds):
 *   allowed_skill_gap(t) = min(skill_cap, skill_base + skill_alpha * t^skill_gamma
 *                                         + sigma_widen * sigma)
 *   allowed_ping(t)      = min(ping_cap,  ping_base + ping_beta * floor(t / ping_step))
 * floor(t / ping_step) is computed on integer milliseconds, so a step boundary is exact.
 *
 * Modes select which curves apply (gf_match_rules_limits):
 *   sbmm        skill curve; ping limit = ping_cap from the start (loose but capped)
 *   ping_first  skill ignored (gap = +INFINITY); ping curve
 *   hybrid      both curves
 *
 * Pure functions of their arguments; reentrant.
 */
#ifndef GAMEFN_MATCH_RULES_H
#define GAMEFN_MATCH_RULES_H

#include <stdint.h>

#include "gamefn/match/config.h"

typedef struct gf_match_limits {
    double skill_gap; /* +INFINITY when the mode ignores skill */
    int64_t ping_ms;
} gf_match_limits;

/* age_ms < 0 counts as 0. */
double gf_match_rules_skill_gap(const gf_match_curve *c, int64_t age_ms, double sigma);
int64_t gf_match_rules_ping(const gf_match_curve *c, int64_t age_ms);

/* The limits of a ticket of queue q that has waited age_ms, with rating uncertainty sigma. */
void gf_match_rules_limits(const gf_match_queue *q, int64_t age_ms, double sigma,
                           gf_match_limits *out);

#endif
