/*
 * sort.c — stable LSD radix sort of 64-bit keys with a 32-bit payload.
 *
 * Design notes: the tick sorts the pool by (partition, skill) and by queue time. A
 * comparison sort through a function pointer costs ~10 ms at 100k tickets; counting
 * passes of 11-bit digits cost a fraction of that. A first pass finds the digits on which
 * all keys agree (the partition bits, usually, and the high bits of small keys); those
 * get neither a histogram nor a pass. Stability makes ties come out in input order, which
 * keeps the tick deterministic. The histograms (6 x 2048 counters) live in the caller's
 * scratch, not on the stack, so the engine runs on small thread stacks too.
 */
#include <string.h>

#include "internal.h"

#define DIGIT_BITS 11
#define DIGITS     6 /* ceil(64 / 11) */
#define BUCKETS    (1u << DIGIT_BITS)

size_t gf_mt_radix_scratch(void)
{
    return (size_t)DIGITS * BUCKETS * sizeof(uint32_t);
}

void gf_mt_radix_sort(uint64_t *keys, uint32_t *vals, uint64_t *tmp_keys, uint32_t *tmp_vals,
                      size_t n, uint32_t *hist)
{
    uint64_t *src_k = keys, *dst_k = tmp_keys;
    uint32_t *src_v = vals, *dst_v = tmp_vals;
    uint64_t any = 0, all = ~0ull;
    int pass[DIGITS], npass = 0;

    if (n < 2)
        return;
    for (size_t i = 0; i < n; i++) {
        any |= keys[i];
        all &= keys[i];
    }
    for (int d = 0; d < DIGITS; d++) {
        if (((any ^ all) >> (DIGIT_BITS * d)) & (BUCKETS - 1))
            pass[npass++] = d;
    }
    if (npass == 0)
        return;
    memset(hist, 0, (size_t)npass * BUCKETS * sizeof *hist);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = keys[i];
        for (int j = 0; j < npass; j++)
            hist[j * BUCKETS + ((k >> (DIGIT_BITS * pass[j])) & (BUCKETS - 1))]++;
    }
    for (int j = 0; j < npass; j++) {
        int shift = DIGIT_BITS * pass[j];
        uint32_t *h = &hist[j * BUCKETS];
        uint32_t sum = 0;
        for (uint32_t v = 0; v < BUCKETS; v++) {
            uint32_t c = h[v];
            h[v] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            uint32_t at = h[(src_k[i] >> shift) & (BUCKETS - 1)]++;
            dst_k[at] = src_k[i];
            dst_v[at] = src_v[i];
        }
        uint64_t *tk = src_k;
        src_k = dst_k;
        dst_k = tk;
        uint32_t *tv = src_v;
        src_v = dst_v;
        dst_v = tv;
    }
    if (src_k != keys) {
        memcpy(keys, src_k, n * sizeof *keys);
        memcpy(vals, src_v, n * sizeof *vals);
    }
}
