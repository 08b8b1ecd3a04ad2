/* clock.h — time helpers shared inside the runtime (private). */
#ifndef GAMEFN_CLOCK_H
#define GAMEFN_CLOCK_H

#include <stdint.h>

int64_t gf_now_mono_ms(void); /* monotonic: for timeouts and durations */
int64_t gf_now_mono_ns(void);
int64_t gf_now_unix_ms(void); /* wall clock: for values other hosts read */
void gf_sleep_ms(int64_t ms);

#endif
