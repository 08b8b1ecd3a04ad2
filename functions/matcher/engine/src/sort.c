/*
 * sort.c — stable LSD radix sorts: of packed 64-bit words by a range of their bits, and of
 * 64-bit keys carrying a 32-bit payload.
 *
 * Design notes: the tick sorts the pool by (partition, skill) and the seeds by queue
 * time. A comparison sort through a function pointer costs ~10 ms at 100k tickets;
 * counting passes cost a fraction of that. The common sorts pack a 32-bit key and a
 * 32-bit payload into one word (half the bytes moved of separate arrays) and use 8-bit
 * digits: 256 buckets keep the scatter's write streams within the L1 cache, which at
 * 100k entries beats fewer passes of 11-bit digits. One first pass finds the digits on
 * which all entries agree (the high bits of small keys, usually); those get neither a
 * histogram nor a pass. Stability makes ties come out in input order, which keeps the
 * tick deterministic. The histograms live in the caller's scratch, not on the stack, so
 * the engine runs on small thread stacks too.
 */
#include <string.h>

#include "internal.h"

#define WIDE_BITS    11 /* gf_mt_radix_sort: 64-bit keys, 6 digits */
#define WIDE_DIGITS  6
#define WIDE_BUCKETS (1u << WIDE_BITS)
#define BYTE_DIGITS  8 /* gf_mt_radix_sort_packed: 8-bit digits */

size_t gf_mt_radix_scratch(void)
{
    return (size_t)WIDE_DIGITS * WIDE_BUCKETS * sizeof(uint32_t);
}

void gf_mt_radix_sort_packed(uint64_t *a, uint64_t *tmp, size_t n, unsigned lo, unsigned bits,
                             uint32_t *hist)
{
    uint64_t *src = a, *dst = tmp;
    uint64_t any = 0, all = ~0ull;
    unsigned pass[BYTE_DIGITS], npass = 0;

    if (n < 2)
        return;
    for (size_t i = 0; i < n; i++) {
        any |= a[i];
        all &= a[i];
    }
    uint64_t span = bits >= 64 ? ~0ull : ((1ull << bits) - 1) << lo;
    uint64_t varies = (any ^ all) & span;
    for (unsigned d = 0; d < BYTE_DIGITS; d++) {
        if ((varies >> (8 * d)) & 0xff)
            pass[npass++] = d;
    }
    if (npass == 0)
        return;
    memset(hist, 0, (size_t)npass * 256 * sizeof *hist);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = a[i] & span;
        for (unsigned j = 0; j < npass; j++)
            hist[j * 256 + ((x >> (8 * pass[j])) & 0xff)]++;
    }
    for (unsigned j = 0; j < npass; j++) {
        unsigned shift = 8 * pass[j];
        uint32_t *h = &hist[j * 256];
        uint32_t sum = 0;
        for (unsigned v = 0; v < 256; v++) {
            uint32_t c = h[v];
            h[v] = sum;
            sum += c;
        }
        /* Bits outside the span are ignored: a digit straddling its edge is masked. */
        uint64_t mask = span >> shift;
        for (size_t i = 0; i < n; i++) {
            uint64_t x = src[i];
            dst[h[(x >> shift) & mask & 0xff]++] = x;
        }
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

void gf_mt_radix_sort(uint64_t *keys, uint32_t *vals, uint64_t *tmp_keys, uint32_t *tmp_vals,
                      size_t n, uint32_t *hist)
{
    uint64_t *src_k = keys, *dst_k = tmp_keys;
    uint32_t *src_v = vals, *dst_v = tmp_vals;
    uint64_t any = 0, all = ~0ull;
    int pass[WIDE_DIGITS], npass = 0;

    if (n < 2)
        return;
    for (size_t i = 0; i < n; i++) {
        any |= keys[i];
        all &= keys[i];
    }
    for (int d = 0; d < WIDE_DIGITS; d++) {
        if (((any ^ all) >> (WIDE_BITS * d)) & (WIDE_BUCKETS - 1))
            pass[npass++] = d;
    }
    if (npass == 0)
        return;
    memset(hist, 0, (size_t)npass * WIDE_BUCKETS * sizeof *hist);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = keys[i];
        for (int j = 0; j < npass; j++)
            hist[j * WIDE_BUCKETS + ((k >> (WIDE_BITS * pass[j])) & (WIDE_BUCKETS - 1))]++;
    }
    for (int j = 0; j < npass; j++) {
        int shift = WIDE_BITS * pass[j];
        uint32_t *h = &hist[j * WIDE_BUCKETS];
        uint32_t sum = 0;
        for (uint32_t v = 0; v < WIDE_BUCKETS; v++) {
            uint32_t c = h[v];
            h[v] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            uint32_t at = h[(src_k[i] >> shift) & (WIDE_BUCKETS - 1)]++;
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
