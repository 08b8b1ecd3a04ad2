/* The echo function's pure logic and its config table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "echo.h"

static void echoes_with_prefix(void **state)
{
    echo_config cfg = {.max_payload = 16, .prefix = "re: "};
    uint8_t *out = NULL;
    size_t len = 0;
    char why[64] = "";
    assert_int_equal(echo_answer(&cfg, (const uint8_t *)"hello", 5, &out, &len, why, sizeof why),
                     GF_OK);
    assert_int_equal(len, 9);
    assert_memory_equal(out, "re: hello", 9);
    free(out);
}

static void empty_payload_is_fine(void **state)
{
    echo_config cfg = {.max_payload = 16};
    uint8_t *out = NULL;
    size_t len = 99;
    char why[64] = "";
    assert_int_equal(echo_answer(&cfg, NULL, 0, &out, &len, why, sizeof why), GF_OK);
    assert_int_equal(len, 0);
    free(out);
}

static void oversize_is_rejected_with_reason(void **state)
{
    echo_config cfg = {.max_payload = 4};
    uint8_t *out = NULL;
    size_t len = 0;
    char why[128] = "";
    assert_int_equal(echo_answer(&cfg, (const uint8_t *)"12345", 5, &out, &len, why, sizeof why),
                     GF_ERR_INVALID);
    assert_null(out);
    assert_non_null(strstr(why, "max_payload 4"));
    /* The boundary itself is accepted. */
    assert_int_equal(echo_answer(&cfg, (const uint8_t *)"1234", 4, &out, &len, why, sizeof why),
                     GF_OK);
    free(out);
}

static void config_table_parses_and_bounds(void **state)
{
    echo_config cfg;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    const char *good = "max_payload: 1KiB\ndelay: 250ms\nprefix: \"x\"\n";
    assert_int_equal(
        gf_config_parse_table("t.yaml", good, strlen(good), &echo_config_table, &cfg, &arena, &err),
        GF_OK);
    assert_int_equal(cfg.max_payload, 1024);
    assert_int_equal(cfg.delay_ms, 250);
    assert_string_equal(cfg.prefix, "x");
    gf_config_arena_free(arena);
    arena = NULL;

    const char *bad = "max_payload: 2MiB\n";
    assert_int_equal(
        gf_config_parse_table("t.yaml", bad, strlen(bad), &echo_config_table, &cfg, &arena, &err),
        GF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "t.yaml:1:"));
    assert_non_null(strstr(err.message, "max_payload"));
    gf_config_arena_free(arena);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(echoes_with_prefix),
        cmocka_unit_test(empty_payload_is_fine),
        cmocka_unit_test(oversize_is_rejected_with_reason),
        cmocka_unit_test(config_table_parses_and_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
