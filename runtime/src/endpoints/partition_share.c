/* partition_share.c — membership list and fair share (see partition_share.h). */
#include "endpoints/partition_share.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/lease.h"

void gf__members_decode(const char *value, size_t len, gf__members *out)
{
    out->n = 0;
    size_t pos = 0;
    while (pos < len && out->n < GF_MEMBERS_MAX) {
        const char *line = value + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t line_len = nl ? (size_t)(nl - line) : len - pos;
        gf__member *m = &out->m[out->n];
        /* Same "<expires> <holder>" text as a lease value. */
        if (gf_lease_decode(line, line_len, &m->expires_unix_ms, m->holder, sizeof m->holder) ==
            GF_OK)
            out->n++;
        pos += line_len + 1;
    }
}

size_t gf__members_encode(const gf__members *ms, char *buf, size_t size)
{
    size_t used = 0;
    if (size == 0)
        return 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ms->n; i++) {
        int n = snprintf(buf + used, size - used, "%" PRId64 " %s\n", ms->m[i].expires_unix_ms,
                         ms->m[i].holder);
        if (n < 0 || (size_t)n >= size - used)
            return 0;
        used += (size_t)n;
    }
    return used;
}

static int by_holder(const void *a, const void *b)
{
    return strcmp(((const gf__member *)a)->holder, ((const gf__member *)b)->holder);
}

void gf__members_update(gf__members *ms, const char *self, int64_t now_unix_ms, int64_t ttl_ms,
                        bool leaving)
{
    size_t kept = 0;
    for (size_t i = 0; i < ms->n; i++) {
        if (ms->m[i].expires_unix_ms > now_unix_ms && strcmp(ms->m[i].holder, self) != 0)
            ms->m[kept++] = ms->m[i];
    }
    ms->n = kept;
    if (!leaving && ms->n < GF_MEMBERS_MAX && strlen(self) < GF_MEMBER_HOLDER_MAX) {
        ms->m[ms->n].expires_unix_ms = now_unix_ms + ttl_ms;
        strcpy(ms->m[ms->n].holder, self);
        ms->n++;
    }
    qsort(ms->m, ms->n, sizeof ms->m[0], by_holder);
}

void gf__share_of(const gf__members *ms, const char *self, unsigned partitions, unsigned *target,
                  unsigned *block_start)
{
    /* Rank of self among the sorted holders, counting self once even if absent. */
    size_t k = ms->n, rank = 0;
    bool present = false;
    for (size_t i = 0; i < ms->n; i++) {
        int c = strcmp(ms->m[i].holder, self);
        if (c == 0)
            present = true;
        else if (c < 0)
            rank++;
    }
    if (!present)
        k++;
    unsigned base = partitions / (unsigned)k, extra = partitions % (unsigned)k;
    *target = base + (rank < extra ? 1 : 0);
    *block_start = (unsigned)(rank * base + (rank < extra ? rank : extra));
}

void gf__share_order(unsigned partitions, unsigned block_start, unsigned target, unsigned *order)
{
    (void)target; /* the block comes first by starting at its beginning */
    for (unsigned i = 0; i < partitions; i++)
        order[i] = (block_start + i) % partitions;
}

unsigned gf__share_release_pick(unsigned partitions, unsigned block_start, unsigned target,
                                const bool *owned)
{
    /* Walk backwards from just before the block (the farthest after its end), so
     * partitions outside the block come first, then the block from its end. */
    for (unsigned i = 1; i <= partitions; i++) {
        unsigned p = (block_start + partitions - i) % partitions;
        if (i <= partitions - target && owned[p])
            return p;
    }
    for (unsigned i = target; i > 0; i--) {
        unsigned p = (block_start + i - 1) % partitions;
        if (owned[p])
            return p;
    }
    return partitions;
}
