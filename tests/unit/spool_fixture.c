/* spool_fixture.c — see spool_fixture.h. */
#include "spool_fixture.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

void sfx_mkdtemp(char *out, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(out, size, "%s/gf-spool-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    assert_non_null(mkdtemp(out));
}

static int64_t fake_clock(void *ctx)
{
    return ((sfx_env *)ctx)->now;
}

int sfx_setup(void **state)
{
    sfx_env *e = calloc(1, sizeof *e);
    assert_non_null(e);
    sfx_mkdtemp(e->dir, sizeof e->dir);
    snprintf(e->state, sizeof e->state, "%s/state", e->dir);
    e->cfg = (gf_spool_config){.dir = e->dir, .clock_ms = fake_clock, .clock_ctx = e};
    *state = e;
    return 0;
}

int sfx_teardown(void **state)
{
    sfx_env *e = *state;
    sfx_rmdir(e->dir);
    free(e);
    return 0;
}

void sfx_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        assert_int_equal(unlink(path), 0);
    }
    closedir(d);
    assert_int_equal(rmdir(dir), 0);
}

void sfx_make(sfx_rec *r, uint64_t seq, size_t size)
{
    assert_true(size <= sizeof r->data);
    snprintf(r->subject, sizeof r->subject, "gamefn.v1.event.p-%llu.kill",
             (unsigned long long)(seq % 97));
    snprintf(r->msg_id, sizeof r->msg_id, "src-1-%llu", (unsigned long long)seq);
    for (size_t i = 0; i < size; i++)
        r->data[i] = (uint8_t)(seq * 31 + i * 7);
    r->rec = (gf_spool_record){
        .seq = seq, .subject = r->subject, .msg_id = r->msg_id, .data = r->data, .data_len = size};
}

void sfx_check(const gf_spool_record *rec)
{
    sfx_rec want;
    sfx_make(&want, rec->seq, rec->data_len);
    assert_string_equal(rec->subject, want.subject);
    assert_string_equal(rec->msg_id, want.msg_id);
    assert_memory_equal(rec->data, want.data, rec->data_len == 0 ? 1 : rec->data_len);
}

void sfx_append(gf_spool *sp, size_t n, size_t size)
{
    sfx_rec r;
    for (size_t i = 0; i < n; i++) {
        sfx_make(&r, gf_spool_next_seq(sp), size);
        assert_int_equal(gf_spool_append(sp, &r.rec), GF_OK);
    }
}

gf_spool *sfx_open(const gf_spool_config *cfg)
{
    gf_spool *sp = NULL;
    assert_int_equal(gf_spool_open(cfg, &sp), GF_OK);
    return sp;
}

void sfx_crash_after(const gf_spool_config *cfg, size_t n, size_t size)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        gf_spool *sp = NULL;
        sfx_rec r;
        if (gf_spool_open(cfg, &sp) != GF_OK)
            _exit(2);
        for (size_t i = 0; i < n; i++) {
            sfx_make(&r, gf_spool_next_seq(sp), size);
            if (gf_spool_append(sp, &r.rec) != GF_OK)
                _exit(3);
        }
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

typedef struct collect {
    uint64_t *seqs;
    size_t n, max;
} collect;

static gf_err collect_one(void *ctx, const gf_spool_record *rec)
{
    collect *c = ctx;
    sfx_check(rec);
    if (c->n > 0)
        assert_true(rec->seq > c->seqs[c->n - 1]);
    assert_true(c->n < c->max);
    c->seqs[c->n++] = rec->seq;
    return GF_OK;
}

size_t sfx_replay(gf_spool *sp, uint64_t after_seq, uint64_t *seqs, size_t max)
{
    collect c = {.seqs = seqs, .max = max};
    assert_int_equal(gf_spool_replay(sp, after_seq, collect_one, &c), GF_OK);
    return c.n;
}

size_t sfx_count_segments(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, "seg-", 4) == 0;
    closedir(d);
    return n;
}

uint8_t *sfx_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    uint8_t *p = malloc((size_t)n + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

void sfx_write_file(const char *path, const uint8_t *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

void sfx_first_segment(const char *dir, char *path, size_t size)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    assert_true(n > 0);
    path[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (path[0] == '\0' && strncmp(names[i]->d_name, "seg-", 4) == 0)
            snprintf(path, size, "%s/%s", dir, names[i]->d_name);
        free(names[i]);
    }
    free(names);
    assert_true(path[0] != '\0');
}
