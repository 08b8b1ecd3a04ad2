/*
 * pending.c — the table of pending.h: GF_INTAKE_PENDING_SLOTS slots in sets of
 * PENDING_WAYS chosen by the player id's hash (FNV-1a), each holding a player, the
 * revision seen, when it was first seen and when last. A player not in its set takes
 * the slot seen longest ago, so records that keep being asked about (clients retrying
 * every retry_after_ms) keep their counts unless more than PENDING_WAYS of them share
 * a set.
 */
#include "pending.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/limits.h"
#include "gamefn/partition.h"

enum { PENDING_WAYS = 4, PENDING_SETS = GF_INTAKE_PENDING_SLOTS / PENDING_WAYS };

typedef struct slot {
    char player[GF_WIRE_ID_MAX + 1]; /* "" free */
    uint64_t revision;
    int64_t since_ms, seen_ms;
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

/* The player's slot in its set, else the one to take for it (free, or seen longest ago). */
static slot *find(intake_pending *p, const char *player, size_t len, bool *found)
{
    slot *set = &p->slots[(gf_partition_fnv1a32(player, len) % PENDING_SETS) * PENDING_WAYS];
    slot *take = &set[0];
    for (size_t i = 0; i < PENDING_WAYS; i++) {
        slot *s = &set[i];
        if (strncmp(s->player, player, len) == 0 && s->player[len] == '\0') {
            *found = true;
            return s;
        }
        if (take->player[0] && (!s->player[0] || s->seen_ms < take->seen_ms))
            take = s;
    }
    *found = false;
    return take;
}

bool intake_pending_seen_for(intake_pending *p, const char *player, uint64_t revision,
                             int64_t now_mono_ms, int64_t grace_ms)
{
    if (grace_ms <= 0)
        return true;
    size_t len = strnlen(player, GF_WIRE_ID_MAX);
    bool found = false;
    pthread_mutex_lock(&p->lock);
    slot *s = find(p, player, len, &found);
    if (!found || s->revision != revision) {
        memcpy(s->player, player, len);
        s->player[len] = '\0';
        s->revision = revision;
        s->since_ms = now_mono_ms;
    }
    s->seen_ms = now_mono_ms;
    bool over = now_mono_ms - s->since_ms >= grace_ms;
    pthread_mutex_unlock(&p->lock);
    return over;
}
