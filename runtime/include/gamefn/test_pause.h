/*
 * test_pause.h — test-only crash points.
 *
 * A function armed by an environment variable (GAMEFN_TEST_<FUNCTION>_PAUSE=<step>)
 * stops at that step of its work and sleeps until a test kills it (SIGKILL): the tests
 * crash a process between two writes of one operation, where a real crash could fall.
 * `<step>:<ms>` sleeps that long at the step instead, then goes on: a test acts in the
 * gap (another writer racing the paused one) and sees what the function does next.
 * Unarmed (the variable unset, as in production) a step costs one string compare. The
 * steps each function offers are listed where it keeps its gf_test_pause.
 *
 * Threads: arm once before the work starts; the checks only read.
 */
#ifndef GAMEFN_TEST_PAUSE_H
#define GAMEFN_TEST_PAUSE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct gf_test_pause {
    char step[32];     /* "" unarmed */
    int64_t resume_ms; /* 0: never resume */
} gf_test_pause;

/* Reads the variable `env_name`; a non-empty value arms the pause (logged). */
void gf_test_pause_arm(gf_test_pause *p, const char *env_name);

/* Whether the pause is armed at `step`. */
bool gf_test_pause_armed(const gf_test_pause *p, const char *step);

/* Armed at `step`: logs it with `what` (e.g. "ticket=<id>") and never returns (or
 * returns after resume_ms, logged again). */
void gf_test_pause_at(const gf_test_pause *p, const char *step, const char *what);

#endif
