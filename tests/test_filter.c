/*
 * tests/test_filter.c — linked into every test executable (cmake/GamefnTest.cmake):
 * GAMEFN_TEST_FILTER=<pattern> runs only the cases whose names match it (cmocka's
 * filter: '*' and '?' wildcards), e.g.
 *
 *   GAMEFN_TEST_FILTER=paused_replicas_wake_up ctest --test-dir build -R test_mm_service -V
 *
 * A constructor, so no test's main() has to remember it: cmocka only keeps the pattern
 * for the next cmocka_run_group_tests(), which every main calls after this ran.
 */
#include <stdlib.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

__attribute__((constructor)) static void filter_from_environment(void)
{
    const char *only = getenv("GAMEFN_TEST_FILTER");
    if (only && only[0])
        cmocka_set_test_filter(only);
}
