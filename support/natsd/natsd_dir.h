/*
 * support/natsd/natsd_dir.h — private to the harness: the temporary directory of
 * each server or cluster (config, log, ports file, JetStream store).
 *
 * Every directory records its owner (pid, the pid's start time, pid namespace) in
 * a file named "owner". A test that crashes cannot remove its directory (its
 * servers die with it, see proc.h), so each new start sweeps the directories
 * under $TMPDIR whose owner is provably gone: same uid, same pid namespace, and
 * that pid no longer runs or now belongs to a process started at another time.
 */
#ifndef GAMEFN_TEST_NATSD_DIR_H
#define GAMEFN_TEST_NATSD_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* mkdtemp("$TMPDIR/<prefix>-XXXXXX") plus its owner file. The path must be safe
 * to put inside double quotes in a config file. Returns 0, or -1 (why on stderr). */
int gf_natsd_dir_create(const char *prefix, char *out, size_t size);

/* Recursively removes dir (no-op for ""). */
void gf_natsd_dir_remove(const char *dir);

/* Removes the directories of dead owners under $TMPDIR (see above). */
void gf_natsd_dir_sweep(void);

#endif
