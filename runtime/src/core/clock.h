/* clock.h — time helpers shared inside the runtime (private). */
#ifndef GAMEFN_CLOCK_H
#define GAMEFN_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>

int64_t gf_now_mono_ms(void); /* monotonic: for timeouts and durations */
int64_t gf_now_mono_ns(void);
int64_t gf_now_unix_ms(void); /* wall clock: for values other hosts read */
void gf_sleep_ms(int64_t ms);

/* Sleeps until the monotonic time `until_ms`, in steps of at most 50 ms, returning
 * early once *stop is non-zero (stop may be NULL). */
void gf_sleep_until(int64_t until_ms, const atomic_int *stop);

#endif
