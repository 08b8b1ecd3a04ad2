/* partition.c — the event partition of a player (see gamefn/partition.h). */
#include "gamefn/partition.h"

#include <string.h>

uint32_t gf_partition_fnv1a32(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

uint32_t gf_partition_of(const char *player_id, uint32_t n)
{
    if (n == 0 || player_id == NULL)
        return 0;
    return gf_partition_fnv1a32(player_id, strlen(player_id)) % n;
}
