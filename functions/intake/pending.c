/*
 * pending.c — the table of pending.h: one slot per player id hash (FNV-1a), holding
 * the revision seen and when it was first seen.
 */
#include "pending.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/partition.h"
#include "gamefn/limits.h"

typedef struct slot {
    char player[GF_WIRE_ID_MAX + 1];
    uint64_t revision;
    int64_t since_ms;
} slot;

struct intake_pending {
    pthread_mutex_t lock;
    slot slots[GF_INTAKE_PENDING_SLOTS];
};

gf_err intake_pending_new(intake_pending **out)
{
    intake_pending *p = calloc(1, sizeof *p);
    if (!p)
        return GF_ERR_NOMEM;
    pthread_mutex_init(&p->lock, NULL);
    *out = p;
    return GF_OK;
}

void intake_pending_free(intake_pending *p)
{
    if (!p)
        return;
    pthread_mutex_destroy(&p->lock);
    free(p);
}

bool intake_pending_seen_for(intake_pending *p, const char *player, uint64_t revision,
                             int64_t now_mono_ms, int64_t grace_ms)
{
    if (grace_ms <= 0)
        return true;
    size_t len = strnlen(player, GF_WIRE_ID_MAX);
    slot *s = &p->slots[gf_partition_fnv1a32(player, len) % GF_INTAKE_PENDING_SLOTS];
    pthread_mutex_lock(&p->lock);
    bool same =
        s->revision == revision && strncmp(s->player, player, len) == 0 && s->player[len] == '\0';
    if (!same) {
        memcpy(s->player, player, len);
        s->player[len] = '\0';
        s->revision = revision;
        s->since_ms = now_mono_ms;
    }
    bool over = now_mono_ms - s->since_ms >= grace_ms;
    pthread_mutex_unlock(&p->lock);
    return over;
}
