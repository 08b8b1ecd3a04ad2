/*
 * rules.c — the two rule curves and the mode presets.
 *
 * Design notes: the skill curve is continuous (pow) and the ping curve is a staircase
 * computed on integer milliseconds, so the step boundaries are exact (t = 4.000 s is
 * step 1, t = 3.999 s is step 0) and the ping limit is an integer that compares exactly
 * with a ping rounded up to whole milliseconds.
 */
#include "gamefn/match/rules.h"

#include <math.h>

double gf_match_rules_skill_gap(const gf_match_curve *c, int64_t age_ms, double sigma)
{
    double t = age_ms > 0 ? (double)age_ms / 1000.0 : 0.0;
    double gap = c->skill_base + c->skill_alpha * pow(t, c->skill_gamma);
    if (sigma > 0 && c->sigma_widen > 0)
        gap += c->sigma_widen * sigma;
    return gap < c->skill_cap ? gap : c->skill_cap;
}

int64_t gf_match_rules_ping(const gf_match_curve *c, int64_t age_ms)
{
    int64_t steps = age_ms > 0 ? age_ms / c->ping_step_ms : 0;
    int64_t cap = c->ping_cap_ms;
    if (c->ping_base_ms >= cap)
        return cap;
    /* Compare before multiplying: a very old ticket must not overflow beta * steps. */
    if (c->ping_beta_ms > 0 && steps > (cap - c->ping_base_ms) / c->ping_beta_ms)
        return cap;
    int64_t ping = c->ping_base_ms + c->ping_beta_ms * steps;
    return ping < cap ? ping : cap;
}

void gf_match_rules_limits(const gf_match_queue *q, int64_t age_ms, double sigma,
                           gf_match_limits *out)
{
    switch (q->mode) {
    case GF_MATCH_SBMM:
        out->skill_gap = gf_match_rules_skill_gap(&q->curve, age_ms, sigma);
        out->ping_ms = q->curve.ping_cap_ms;
        break;
    case GF_MATCH_PING_FIRST:
        out->skill_gap = INFINITY;
        out->ping_ms = gf_match_rules_ping(&q->curve, age_ms);
        break;
    default:
        out->skill_gap = gf_match_rules_skill_gap(&q->curve, age_ms, sigma);
        out->ping_ms = gf_match_rules_ping(&q->curve, age_ms);
        break;
    }
}
