/*
 * gamefn/clock.h — the one clock of the runtime, its tests and its benchmarks.
 *
 * Monotonic time (CLOCK_MONOTONIC) is for timeouts, deadlines and durations: it never
 * jumps when the wall clock is set. Wall-clock time (CLOCK_REALTIME) is only for
 * values other hosts read: lease expiries, tick times, log timestamps, the start time
 * $SRV reports.
 *
 * Threads: every function is reentrant. Nothing here allocates.
 */
#ifndef GAMEFN_CLOCK_H
#define GAMEFN_CLOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"

int64_t gf_clock_mono_ns(void);
int64_t gf_clock_mono_ms(void);
int64_t gf_clock_unix_ns(void);
int64_t gf_clock_unix_ms(void);

/* The one RFC 3339 formatter: `unix_ns` as UTC with `digits` (0..9) fractional
 * digits, e.g. 3 -> "2026-11-29T15:32:16.123Z", 9 -> "...16.123456789Z", 0 ->
 * "...16Z". Truncates (never rounds) the fraction. Always NUL-terminates; returns buf.
 * 36 bytes hold any result (GF_CLOCK_RFC3339_MAX). */
enum { GF_CLOCK_RFC3339_MAX = 36 };
char *gf_clock_rfc3339(int64_t unix_ns, int digits, char *buf, size_t size);

/* The inverse, for what servers and people write: "YYYY-MM-DDTHH:MM:SS", an optional
 * fraction of 1..9 digits, then "Z" or an offset "+HH:MM" / "-HH:MM" ('t', 'z' and a
 * space for 'T' accepted), years 1970..9999. GF_ERR_INVALID for anything else, including
 * impossible dates ("2026-02-30") and trailing text. */
gf_err gf_clock_parse_rfc3339(const char *text, int64_t *unix_ns);

/* Sleeps `ms` milliseconds (nothing for ms <= 0), resuming after signals. */
void gf_clock_sleep_ms(int64_t ms);

/* Sleeps until the monotonic time `until_ms`, in steps of at most 50 ms, returning
 * early once *stop is non-zero (stop may be NULL). */
void gf_clock_sleep_until(int64_t until_ms, const atomic_int *stop);

#endif
