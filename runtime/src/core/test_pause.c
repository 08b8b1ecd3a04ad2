/*
 * test_pause.c — see gamefn/test_pause.h.
 */
#include "gamefn/test_pause.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"

void gf_test_pause_arm(gf_test_pause *p, const char *env_name)
{
    const char *step = getenv(env_name);
    p->step[0] = '\0';
    if (!step || !step[0])
        return;
    snprintf(p->step, sizeof p->step, "%s", step);
    char *colon = strchr(p->step, ':');
    p->resume_ms = 0;
    if (colon) {
        *colon = '\0';
        p->resume_ms = strtoll(colon + 1, NULL, 10);
    }
    gf_log_warn("test pause armed", "step=%s resume_ms=%lld", p->step, (long long)p->resume_ms);
}

bool gf_test_pause_armed(const gf_test_pause *p, const char *step)
{
    return p->step[0] && strcmp(p->step, step) == 0;
}

void gf_test_pause_at(const gf_test_pause *p, const char *step, const char *what)
{
    if (!gf_test_pause_armed(p, step))
        return;
    gf_log_warn("paused for a test", "step=%s %s", step, what);
    if (p->resume_ms > 0) {
        gf_clock_sleep_ms(p->resume_ms);
        gf_log_warn("test pause over", "step=%s %s", step, what);
        return;
    }
    for (;;)
        gf_clock_sleep_ms(1000);
}
