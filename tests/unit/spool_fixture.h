/*
 * spool_fixture.h — temporary spool directories and deterministic records for the
 * spool's unit tests. Single-threaded; every function fails the test on error.
 */
#ifndef GAMEFN_TEST_SPOOL_FIXTURE_H
#define GAMEFN_TEST_SPOOL_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/spool.h"

/* A record whose fields are a function of (seq, size): subject, msg id and `size`
 * data bytes live in the struct. */
typedef struct sfx_rec {
    gf_spool_record rec;
    char subject[64];
    char msg_id[64];
    uint8_t data[4096];
} sfx_rec;

/* A test's spool: a fresh directory, a config with a fake clock (now), paths of
 * its state file and (once sfx_first_segment is called) first segment, and room for
 * replayed seqs. */
typedef struct sfx_env {
    char dir[256];
    char seg[320];
    char state[320];
    gf_spool_config cfg;
    int64_t now;
    uint64_t seqs[4096];
} sfx_env;

/* cmocka setup / teardown: *state becomes a new sfx_env; teardown removes the
 * directory and frees it. */
int sfx_setup(void **state);
int sfx_teardown(void **state);

/* Creates an empty directory under $TMPDIR (or /tmp) into out (>= 256 bytes). */
void sfx_mkdtemp(char *out, size_t size);

/* Removes every file in dir, then dir itself. */
void sfx_rmdir(const char *dir);

void sfx_make(sfx_rec *r, uint64_t seq, size_t size);

/* Checks that rec equals sfx_make(seq, size) for its own seq, whatever the size. */
void sfx_check(const gf_spool_record *rec);

/* Appends n records (seq next, next+1, ...) of `size` data bytes; asserts GF_OK. */
void sfx_append(gf_spool *sp, size_t n, size_t size);

/* gf_spool_open, asserting GF_OK. */
gf_spool *sfx_open(const gf_spool_config *cfg);

/* A producer process that opens the spool, appends n records of `size` data bytes and
 * dies (no close, no cleanup, like SIGKILL: what it wrote is in the OS's hands). */
void sfx_crash_after(const gf_spool_config *cfg, size_t n, size_t size);

/* Replays from after_seq and returns the seqs seen (up to max) in seqs; asserts each
 * record with sfx_check. Returns how many were seen. */
size_t sfx_replay(gf_spool *sp, uint64_t after_seq, uint64_t *seqs, size_t max);

/* Number of seg-*.log files in dir. */
size_t sfx_count_segments(const char *dir);

/* Reads a whole file (malloc'd, caller frees) or writes one. */
uint8_t *sfx_read_file(const char *path, size_t *len);
void sfx_write_file(const char *path, const uint8_t *p, size_t len);

/* Path of the only (or first) segment in dir. */
void sfx_first_segment(const char *dir, char *path, size_t size);

#endif
