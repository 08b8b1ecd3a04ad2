/* Environment overrides: GAMEFN_NATS_URL, GAMEFN_NATS_CREDS, GAMEFN_NATS_NKEY_SEED,
 * GAMEFN_NATS_USER, GAMEFN_NATS_PASSWORD, GAMEFN_LOG_LEVEL, GAMEFN_INSTANCE_ID. */
#include "test_config_util.h"

static const char base_yaml[] = "nats:\n"
                                "  servers: [\"nats://file:4222\"]\n"
                                "log:\n"
                                "  level: info\n"
                                "runtime:\n"
                                "  instance_id: from-file\n";

static int setup(void **state)
{
    unset_gamefn_env();
    return 0;
}

static int teardown(void **state)
{
    unset_gamefn_env();
    return 0;
}

static gf_err load(const char *yaml, gf_config **cfg, gf_config_error *err)
{
    *cfg = NULL;
    gf_err rc = gf_config_load_string("t.yaml", yaml, strlen(yaml), NULL, cfg, err);
    if (rc != GF_OK)
        assert_null(*cfg);
    return rc;
}

static void nothing_set_keeps_the_file(void **state)
{
    gf_config *cfg = NULL;
    gf_config_error err;
    assert_int_equal(load(base_yaml, &cfg, &err), GF_OK);
    assert_int_equal(cfg->nats.servers_len, 1);
    assert_string_equal(cfg->nats.servers[0], "nats://file:4222");
    assert_string_equal(cfg->runtime.instance_id, "from-file");
    gf_config_free(cfg);

    /* A variable set to the empty string counts as unset. */
    setenv("GAMEFN_NATS_URL", "", 1);
    setenv("GAMEFN_LOG_LEVEL", "", 1);
    setenv("GAMEFN_NATS_USER", "", 1);
    assert_int_equal(load(base_yaml, &cfg, &err), GF_OK);
    assert_string_equal(cfg->nats.servers[0], "nats://file:4222");
    assert_int_equal(cfg->log.level, GF_LOG_INFO);
    assert_null(cfg->nats.user);
    gf_config_free(cfg);
}

static void url_list_replaces_servers(void **state)
{
    static const struct {
        const char *value;
        size_t n;
        const char *first, *last;
    } good[] = {
        {"nats://a:4222", 1, "nats://a:4222", "nats://a:4222"},
        {" nats://a:1 , tls://b:2 ,\tc:3 ", 3, "nats://a:1", "c:3"},
        {"nats://a:1,nats://b:2", 2, "nats://a:1", "nats://b:2"},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        gf_config *cfg = NULL;
        gf_config_error err;
        setenv("GAMEFN_NATS_URL", good[i].value, 1);
        if (load(base_yaml, &cfg, &err) != GF_OK)
            fail_msg("'%s': %s", good[i].value, err.message);
        assert_int_equal(cfg->nats.servers_len, good[i].n);
        assert_string_equal(cfg->nats.servers[0], good[i].first);
        assert_string_equal(cfg->nats.servers[good[i].n - 1], good[i].last);
        gf_config_free(cfg);
    }
}

static void bad_env_values_name_the_variable(void **state)
{
    static const struct {
        const char *var, *value;
        const char *key, *text;
    } bad[] = {
        {"GAMEFN_NATS_URL", "nats://a:1,,nats://b:2", "nats.servers",
         "entry 1 of the comma-separated list is empty"},
        {"GAMEFN_NATS_URL", "nats://a:1,", "nats.servers", "entry 1 of the comma-separated"},
        {"GAMEFN_NATS_URL", ",nats://a:1", "nats.servers", "entry 0 of the comma-separated"},
        {"GAMEFN_NATS_URL", "  ", "nats.servers", "entry 0 of the comma-separated list is empty"},
        {"GAMEFN_NATS_URL", ",", "nats.servers", "is empty"},
        {"GAMEFN_NATS_URL", "nats://a b:1", "nats.servers", "entry 0 contains whitespace"},
        {"GAMEFN_NATS_URL", "http://secret@a:1", "nats.servers", "scheme other than"},
        {"GAMEFN_LOG_LEVEL", "verbose", "log.level",
         "'verbose' is not one of: debug, info, warn, error, off"},
        {"GAMEFN_LOG_LEVEL", "INFO", "log.level", "is not one of"},
        {"GAMEFN_INSTANCE_ID", "pod.7", "runtime.instance_id",
         "may hold only letters, digits, '_' and '-'"},
        {"GAMEFN_INSTANCE_ID", "a123456789a123456789a123456789a123456789a123456789a123456789a1234",
         "runtime.instance_id", "longer than 64"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gf_config *cfg = NULL;
        gf_config_error err;
        unset_gamefn_env();
        setenv(bad[i].var, bad[i].value, 1);
        gf_err rc = load(base_yaml, &cfg, &err);
        if (rc != GF_ERR_CONFIG || strcmp(err.file, bad[i].var) != 0 ||
            strcmp(err.key, bad[i].key) != 0 || !strstr(err.text, bad[i].text))
            fail_msg("%s='%s': rc %d, %s", bad[i].var, bad[i].value, rc, err.message);
        assert_has(err.message, bad[i].var);
        assert_int_equal(err.line, 0);
        /* URLs may embed credentials: never echoed. */
        assert_null(strstr(err.message, "secret"));
    }
    /* exact shape */
    gf_config *cfg = NULL;
    gf_config_error err;
    unset_gamefn_env();
    setenv("GAMEFN_NATS_URL", "nats://a:1,,nats://b:2", 1);
    assert_int_equal(load(base_yaml, &cfg, &err), GF_ERR_CONFIG);
    assert_string_equal(err.message, "GAMEFN_NATS_URL: key 'nats.servers': entry 1 of the "
                                     "comma-separated list is empty");
}

static void deployment_values_override(void **state)
{
    gf_config *cfg = NULL;
    gf_config_error err;
    setenv("GAMEFN_LOG_LEVEL", "debug", 1);
    setenv("GAMEFN_INSTANCE_ID", "pod-7", 1);
    setenv("GAMEFN_NATS_USER", "alice", 1);
    setenv("GAMEFN_NATS_PASSWORD", "s3cret", 1);
    assert_int_equal(load(base_yaml, &cfg, &err), GF_OK);
    assert_int_equal(cfg->log.level, GF_LOG_DEBUG);
    assert_string_equal(cfg->runtime.instance_id, "pod-7");
    assert_string_equal(cfg->nats.user, "alice");
    assert_string_equal(cfg->nats.password, "s3cret");
    assert_null(cfg->nats.credentials);
    gf_config_free(cfg);

    unset_gamefn_env();
    setenv("GAMEFN_NATS_CREDS", "/etc/gamefn/fn.creds", 1);
    assert_int_equal(load(base_yaml, &cfg, &err), GF_OK);
    assert_string_equal(cfg->nats.credentials, "/etc/gamefn/fn.creds");
    gf_config_free(cfg);

    unset_gamefn_env();
    setenv("GAMEFN_NATS_NKEY_SEED", "/etc/gamefn/fn.nk", 1);
    assert_int_equal(load(base_yaml, &cfg, &err), GF_OK);
    assert_string_equal(cfg->nats.nkey_seed, "/etc/gamefn/fn.nk");
    gf_config_free(cfg);

    /* Overrides apply on top of defaults too. */
    unset_gamefn_env();
    setenv("GAMEFN_NATS_URL", "nats://x:1", 1);
    assert_int_equal(load("log: {}\n", &cfg, &err), GF_OK);
    assert_string_equal(cfg->nats.servers[0], "nats://x:1");
    gf_config_free(cfg);
}

static void env_conflicts_with_the_file(void **state)
{
    static const char creds_yaml[] = "nats:\n  credentials: /etc/a.creds\n";
    gf_config *cfg = NULL;
    gf_config_error err;
    setenv("GAMEFN_NATS_USER", "alice", 1);
    setenv("GAMEFN_NATS_PASSWORD", "s3cret", 1);
    assert_int_equal(load(creds_yaml, &cfg, &err), GF_ERR_CONFIG);
    assert_string_equal(err.file, "GAMEFN_NATS_USER");
    assert_string_equal(err.key, "nats.credentials");
    assert_has(err.text, "credentials cannot be combined with user/password");
    assert_has(err.text, "after environment overrides");
    assert_null(strstr(err.message, "s3cret"));

    /* A password alone from the environment, with no user anywhere. */
    unset_gamefn_env();
    setenv("GAMEFN_NATS_PASSWORD", "s3cret", 1);
    assert_int_equal(load(base_yaml, &cfg, &err), GF_ERR_CONFIG);
    assert_string_equal(err.file, "GAMEFN_NATS_PASSWORD");
    assert_has(err.text, "password is set but user is not");
    assert_null(strstr(err.message, "s3cret"));
}

static void env_is_checked_after_the_file(void **state)
{
    /* A file error wins over an environment error: the file is read first. */
    gf_config *cfg = NULL;
    gf_config_error err;
    setenv("GAMEFN_LOG_LEVEL", "verbose", 1);
    assert_int_equal(load("log:\n  level: loud\n", &cfg, &err), GF_ERR_CONFIG);
    assert_string_equal(err.file, "t.yaml");
    assert_int_equal(err.line, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(nothing_set_keeps_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(url_list_replaces_servers, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_env_values_name_the_variable, setup, teardown),
        cmocka_unit_test_setup_teardown(deployment_values_override, setup, teardown),
        cmocka_unit_test_setup_teardown(env_conflicts_with_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(env_is_checked_after_the_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
