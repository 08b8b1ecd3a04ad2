/* tally.c — per-player event counts, idempotent and fenced (see tally.h). */
#include "tally.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/names.h"

void ec_record_init(ec_record *r)
{
    memset(r, 0, sizeof *r);
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end = NULL;
    if (!*s || *s == '-')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno)
        return false;
    *out = v;
    return true;
}

gf_err ec_record_decode(const char *text, size_t len, ec_record *r)
{
    char buf[EC_RECORD_MAX + 1];
    if (!text || len == 0 || len > EC_RECORD_MAX)
        return GF_ERR_INVALID;
    memcpy(buf, text, len);
    buf[len] = '\0';
    ec_record_init(r);
    char *save = NULL;
    const char *tok[4];
    for (int i = 0; i < 4; i++) {
        tok[i] = strtok_r(i == 0 ? buf : NULL, " ", &save);
        if (!tok[i])
            return GF_ERR_INVALID;
    }
    if (strcmp(tok[0], "v1") != 0 || !parse_u64(tok[1], &r->applied_seq) ||
        !parse_u64(tok[2], &r->token) || !parse_u64(tok[3], &r->total))
        return GF_ERR_INVALID;
    for (char *t = strtok_r(NULL, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(t, '=');
        if (!eq || r->ntypes == EC_TYPES_MAX)
            return GF_ERR_INVALID;
        *eq = '\0';
        if (!gf_name_id_ok(t, EC_TYPE_MAX, NULL, 0) || !parse_u64(eq + 1, &r->types[r->ntypes].n))
            return GF_ERR_INVALID;
        strcpy(r->types[r->ntypes].type, t);
        r->ntypes++;
    }
    return GF_OK;
}

size_t ec_record_encode(const ec_record *r, char *buf, size_t size)
{
    int n = snprintf(buf, size, "v1 %" PRIu64 " %" PRIu64 " %" PRIu64, r->applied_seq, r->token,
                     r->total);
    size_t used = n > 0 ? (size_t)n : 0;
    for (size_t i = 0; i < r->ntypes && used < size; i++) {
        n = snprintf(buf + used, size - used, " %s=%" PRIu64, r->types[i].type, r->types[i].n);
        used += n > 0 ? (size_t)n : 0;
    }
    return used < size ? used : 0;
}

bool ec_record_fence(ec_record *r, uint64_t token)
{
    if (r->token > token)
        return false;
    r->token = token;
    return true;
}

bool ec_record_apply(ec_record *r, uint64_t seq, const char *type)
{
    if (seq <= r->applied_seq)
        return false;
    r->applied_seq = seq;
    r->total++;
    for (size_t i = 0; i < r->ntypes; i++) {
        if (strcmp(r->types[i].type, type) == 0) {
            r->types[i].n++;
            return true;
        }
    }
    if (r->ntypes < EC_TYPES_MAX && strlen(type) <= EC_TYPE_MAX) {
        strcpy(r->types[r->ntypes].type, type);
        r->types[r->ntypes++].n = 1;
    }
    return true;
}

void ec_record_reset(ec_record *r)
{
    r->total = 0;
    r->ntypes = 0;
}

gf_err ec_subject_parse(const char *subject, char *player, size_t player_size, char *type,
                        size_t type_size)
{
    static const char prefix[] = "gamefn.v1.evp.";
    if (!subject || strncmp(subject, prefix, sizeof prefix - 1) != 0)
        return GF_ERR_INVALID;
    const char *p = strchr(subject + sizeof prefix - 1, '.'); /* after the partition */
    const char *t = p ? strchr(p + 1, '.') : NULL;            /* after the player */
    if (!p || !t || strchr(t + 1, '.'))
        return GF_ERR_INVALID;
    size_t plen = (size_t)(t - p - 1), tlen = strlen(t + 1);
    if (plen == 0 || plen >= player_size || tlen == 0 || tlen >= type_size)
        return GF_ERR_INVALID;
    memcpy(player, p + 1, plen);
    player[plen] = '\0';
    memcpy(type, t + 1, tlen + 1);
    if (!gf_name_id_ok(player, EC_PLAYER_MAX, NULL, 0) ||
        !gf_name_id_ok(type, EC_TYPE_MAX, NULL, 0))
        return GF_ERR_INVALID;
    return GF_OK;
}
