/*
 * fleet_record.c — request checks and ServerRecord transitions (see fleet_record.h).
 *
 * Design notes: a transition starts from a shallow copy of the old record and sets
 * only what it changes, so fields a newer schema added survive a rewrite by this
 * version (protobuf-c keeps unknown fields in the message base and packs them back).
 * Attribute entries are copied into the caller's fleet_next, because the request's
 * map entries are another message type.
 */
#include "fleet_record.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/names.h"
#include "gamefn/utf8.h"
#include "gamefn/v1/error.pb-c.h"

static gf_err problem(fleet_problem *p, gf_err err, int code, const char *field, const char *fmt,
                      ...) __attribute__((format(printf, 5, 6)));

static gf_err problem(fleet_problem *p, gf_err err, int code, const char *field, const char *fmt,
                      ...)
{
    char what[GF_WIRE_TEXT_MAX - GF_WIRE_FIELD_MAX - 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    p->err = err;
    p->code = code;
    snprintf(p->field, sizeof p->field, "%s", field ? field : "");
    if (field && field[0])
        snprintf(p->text, sizeof p->text, "%s: %s", field, what);
    else
        snprintf(p->text, sizeof p->text, "%s", what);
    return err;
}

bool fleet_key(const char *datacenter, const char *server_id, char key[FLEET_KEY_MAX])
{
    if (!gf_name_id_ok(datacenter, GF_WIRE_NAME_MAX, NULL, 0) ||
        !gf_name_id_ok(server_id, GF_WIRE_ID_MAX, NULL, 0))
        return false;
    snprintf(key, FLEET_KEY_MAX, "%s.%s", datacenter, server_id);
    return true;
}

bool fleet_key_split(const char *key, char datacenter[GF_WIRE_NAME_MAX + 1],
                     char server_id[GF_WIRE_ID_MAX + 1])
{
    const char *dot = strchr(key, '.');
    size_t n = dot ? (size_t)(dot - key) : 0;
    if (!dot || n > GF_WIRE_NAME_MAX || strlen(dot + 1) > GF_WIRE_ID_MAX)
        return false;
    memcpy(datacenter, key, n);
    datacenter[n] = '\0';
    snprintf(server_id, GF_WIRE_ID_MAX + 1, "%s", dot + 1);
    return gf_name_id_ok(datacenter, GF_WIRE_NAME_MAX, NULL, 0) &&
           gf_name_id_ok(server_id, GF_WIRE_ID_MAX, NULL, 0);
}

bool fleet_id_key(const char *server_id, char key[FLEET_KEY_MAX])
{
    if (!gf_name_id_ok(server_id, GF_WIRE_ID_MAX, NULL, 0))
        return false;
    snprintf(key, FLEET_KEY_MAX, "%s%s", FLEET_ID_PREFIX, server_id);
    return true;
}

bool fleet_is_id_key(const char *key)
{
    return strncmp(key, FLEET_ID_PREFIX, sizeof FLEET_ID_PREFIX - 1) == 0;
}

size_t fleet_id_value(const char *datacenter, int64_t claimed_unix_ms, char out[FLEET_ID_VALUE_MAX])
{
    int n = snprintf(out, FLEET_ID_VALUE_MAX, "%lld %s", (long long)claimed_unix_ms, datacenter);
    return n < 0 ? 0 : (size_t)n < FLEET_ID_VALUE_MAX ? (size_t)n : FLEET_ID_VALUE_MAX - 1;
}

bool fleet_id_parse(const void *data, size_t len, char datacenter[GF_WIRE_NAME_MAX + 1],
                    int64_t *claimed_unix_ms)
{
    char text[FLEET_ID_VALUE_MAX];
    if (!data || len == 0 || len >= sizeof text)
        return false;
    memcpy(text, data, len);
    text[len] = '\0';
    const char *space = strchr(text, ' ');
    if (!space || space == text || space - text > 19 ||
        strspn(text, "0123456789") != (size_t)(space - text))
        return false;
    *claimed_unix_ms = strtoll(text, NULL, 10);
    snprintf(datacenter, GF_WIRE_NAME_MAX + 1, "%s", space + 1);
    return strlen(space + 1) <= GF_WIRE_NAME_MAX &&
           gf_name_id_ok(datacenter, GF_WIRE_NAME_MAX, NULL, 0);
}

/* UTF-8 of at most `max` bytes without control characters. */
static bool text_ok(const char *s, size_t max, char *why, size_t why_size)
{
    size_t len = s ? strlen(s) : 0;
    if (len > max) {
        snprintf(why, why_size, "too long (%zu bytes, max %zu)", len, max);
        return false;
    }
    if (!gf_utf8_valid(s, len)) {
        snprintf(why, why_size, "not valid UTF-8");
        return false;
    }
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
            snprintf(why, why_size, "contains a control character");
            return false;
        }
    return true;
}

/* A host name (labels of [A-Za-z0-9-], not starting or ending with '-') or an IP
 * literal (IPv4 dotted, or IPv6: hex digits, ':' and '.'). */
static bool address_ok(const char *s, char *why, size_t why_size)
{
    size_t len = s ? strlen(s) : 0;
    if (len == 0 || len > GF_WIRE_ADDRESS_MAX) {
        snprintf(why, why_size, "must be 1..%d bytes (got %zu)", GF_WIRE_ADDRESS_MAX, len);
        return false;
    }
    if (strchr(s, ':')) {
        if (strspn(s, "0123456789abcdefABCDEF:.") == len)
            return true;
        snprintf(why, why_size, "not an IPv6 literal");
        return false;
    }
    for (const char *label = s;;) {
        size_t n = strcspn(label, ".");
        if (n == 0 || n > 63 || label[0] == '-' || label[n - 1] == '-' ||
            strspn(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") < n) {
            snprintf(why, why_size, "not a host name or IP literal");
            return false;
        }
        if (label[n] == '\0')
            return true;
        label += n + 1;
    }
}

static gf_err check_ids(const char *server_id, const char *datacenter, const fleet_config *cfg,
                        fleet_problem *p)
{
    char why[GF_NAME_WHY_MAX];
    if (!gf_name_id_ok(server_id, GF_WIRE_ID_MAX, why, sizeof why))
        return problem(p, GF_ERR_INVALID, 0, "server_id", "%s", why);
    if (!gf_name_id_ok(datacenter, GF_WIRE_NAME_MAX, why, sizeof why))
        return problem(p, GF_ERR_INVALID, 0, "datacenter", "%s", why);
    if (!fleet_config_dc(cfg, datacenter))
        return problem(p, GF_ERR_INVALID, 0, "datacenter", "unknown datacenter %s", datacenter);
    return GF_OK;
}

gf_err fleet_check_register(const Gamefn__V1__RegisterServerRequest *req, const fleet_config *cfg,
                            fleet_problem *p)
{
    char why[GF_WIRE_TEXT_MAX], field[GF_WIRE_FIELD_MAX];
    gf_err err = check_ids(req->server_id, req->datacenter, cfg, p);
    if (err != GF_OK)
        return err;
    if (!address_ok(req->address, why, sizeof why))
        return problem(p, GF_ERR_INVALID, 0, "address", "%s", why);
    if (req->port < 1 || req->port > 65535)
        return problem(p, GF_ERR_INVALID, 0, "port", "must be 1..65535 (got %u)", req->port);
    if (req->capacity < 1 || req->capacity > GF_WIRE_CAPACITY_MAX)
        return problem(p, GF_ERR_INVALID, 0, "capacity", "must be 1..%d (got %u)",
                       GF_WIRE_CAPACITY_MAX, req->capacity);
    if (req->n_attributes > GF_WIRE_ATTRS_MAX)
        return problem(p, GF_ERR_INVALID, 0, "attributes", "too many entries (%zu, max %d)",
                       req->n_attributes, GF_WIRE_ATTRS_MAX);
    for (size_t i = 0; i < req->n_attributes; i++) {
        const char *k = req->attributes[i]->key, *v = req->attributes[i]->value;
        if (!gf_name_id_ok(k, GF_WIRE_NAME_MAX, why, sizeof why))
            return problem(p, GF_ERR_INVALID, 0, "attributes", "key %s", why);
        snprintf(field, sizeof field, "attributes[%s]", k);
        for (size_t j = 0; j < i; j++)
            if (strcmp(req->attributes[j]->key, k) == 0)
                return problem(p, GF_ERR_INVALID, 0, field, "key given twice");
        if (!text_ok(v, GF_WIRE_ATTR_VALUE_MAX, why, sizeof why))
            return problem(p, GF_ERR_INVALID, 0, field, "%s", why);
    }
    if (!text_ok(req->version, GF_WIRE_VERSION_MAX, why, sizeof why))
        return problem(p, GF_ERR_INVALID, 0, "version", "%s", why);
    return GF_OK;
}

gf_err fleet_check_heartbeat(const Gamefn__V1__HeartbeatRequest *req, const fleet_config *cfg,
                             fleet_problem *p)
{
    char why[GF_NAME_WHY_MAX];
    gf_err err = check_ids(req->server_id, req->datacenter, cfg, p);
    if (err != GF_OK)
        return err;
    if (req->players > GF_WIRE_CAPACITY_MAX)
        return problem(p, GF_ERR_INVALID, 0, "players", "must be 0..%d (got %u)",
                       GF_WIRE_CAPACITY_MAX, req->players);
    if (req->finished_match_id && req->finished_match_id[0] &&
        !gf_name_id_ok(req->finished_match_id, GF_WIRE_ID_MAX, why, sizeof why))
        return problem(p, GF_ERR_INVALID, 0, "finished_match_id", "%s", why);
    return GF_OK;
}

gf_err fleet_check_deregister(const Gamefn__V1__DeregisterServerRequest *req,
                              const fleet_config *cfg, fleet_problem *p)
{
    gf_err err = check_ids(req->server_id, req->datacenter, cfg, p);
    if (err != GF_OK)
        return err;
    switch (req->reason) {
    case GAMEFN__V1__DEREGISTER_REASON__DEREGISTER_REASON_UNSPECIFIED:
    case GAMEFN__V1__DEREGISTER_REASON__DEREGISTER_REASON_SHUTDOWN:
    case GAMEFN__V1__DEREGISTER_REASON__DEREGISTER_REASON_HIBERNATE:
        return GF_OK;
    default:
        return problem(p, GF_ERR_INVALID, 0, "reason", "unknown reason %d", (int)req->reason);
    }
}

gf_err fleet_check_record(const Gamefn__V1__ServerRecord *rec, fleet_problem *p)
{
    char why[GF_NAME_WHY_MAX];
    if (!gf_name_id_ok(rec->server_id, GF_WIRE_ID_MAX, why, sizeof why))
        return problem(p, GF_ERR_INVALID, 0, "server_id", "%s", why);
    if (!gf_name_id_ok(rec->datacenter, GF_WIRE_NAME_MAX, why, sizeof why))
        return problem(p, GF_ERR_INVALID, 0, "datacenter", "%s", why);
    if (rec->state < GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE ||
        rec->state > GAMEFN__V1__SERVER_STATE__SERVER_STATE_DRAINING)
        return problem(p, GF_ERR_INVALID, 0, "state", "unknown state %d", (int)rec->state);
    bool has_match = rec->allocated_match_id && rec->allocated_match_id[0];
    if ((rec->state == GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED) != has_match &&
        rec->state != GAMEFN__V1__SERVER_STATE__SERVER_STATE_DRAINING)
        return problem(p, GF_ERR_INVALID, 0, "allocated_match_id",
                       "must be set exactly when ALLOCATED");
    if (has_match && !gf_name_id_ok(rec->allocated_match_id, GF_WIRE_ID_MAX, why, sizeof why))
        return problem(p, GF_ERR_INVALID, 0, "allocated_match_id", "%s", why);
    if (rec->n_expected_player_ids > GF_WIRE_CAPACITY_MAX ||
        rec->n_allocated_ticket_ids > GF_WIRE_CAPACITY_MAX)
        return problem(p, GF_ERR_INVALID, 0, "expected_player_ids", "too many");
    for (size_t i = 0; i < rec->n_expected_player_ids; i++)
        if (!gf_name_id_ok(rec->expected_player_ids[i], GF_WIRE_ID_MAX, why, sizeof why))
            return problem(p, GF_ERR_INVALID, 0, "expected_player_ids", "%s", why);
    for (size_t i = 0; i < rec->n_allocated_ticket_ids; i++)
        if (!gf_name_id_ok(rec->allocated_ticket_ids[i], GF_WIRE_ID_MAX, why, sizeof why))
            return problem(p, GF_ERR_INVALID, 0, "allocated_ticket_ids", "%s", why);
    return GF_OK;
}

/* Attribute i of the record being written, in next's own entries (borrowed strings). */
static void put_attr(fleet_next *next, size_t i, char *key, char *value)
{
    Gamefn__V1__ServerRecord__AttributesEntry e = GAMEFN__V1__SERVER_RECORD__ATTRIBUTES_ENTRY__INIT;
    e.key = key;
    e.value = value;
    next->attr[i] = e;
    next->attr_ptr[i] = &next->attr[i];
}

static void end_attrs(fleet_next *next, size_t n)
{
    next->rec.n_attributes = n;
    next->rec.attributes = n ? next->attr_ptr : NULL;
}

/* next = old (all of it), with attributes rebuilt in next's own entries. */
static void start_from(const Gamefn__V1__ServerRecord *old, fleet_next *next)
{
    if (old) {
        next->rec = *old;
    } else {
        Gamefn__V1__ServerRecord init = GAMEFN__V1__SERVER_RECORD__INIT;
        next->rec = init;
    }
    size_t n = old ? old->n_attributes : 0;
    if (n > GF_WIRE_ATTRS_MAX)
        n = GF_WIRE_ATTRS_MAX;
    for (size_t i = 0; i < n; i++)
        put_attr(next, i, old->attributes[i]->key, old->attributes[i]->value);
    end_attrs(next, n);
}

static void clear_allocation(Gamefn__V1__ServerRecord *r)
{
    r->allocated_match_id = fleet_str(protobuf_c_empty_string);
    r->allocated_unix_ms = 0;
    r->n_expected_player_ids = 0;
    r->expected_player_ids = NULL;
    r->n_allocated_ticket_ids = 0;
    r->allocated_ticket_ids = NULL;
}

static void heard_from(Gamefn__V1__ServerRecord *r, int64_t now, int64_t timeout)
{
    r->last_heartbeat_unix_ms = now;
    r->stale_unix_ms = now + timeout;
}

void fleet_apply_register(const Gamefn__V1__ServerRecord *old,
                          const Gamefn__V1__RegisterServerRequest *req, int64_t now_unix_ms,
                          int64_t heartbeat_timeout_ms, fleet_next *next)
{
    start_from(old, next);
    Gamefn__V1__ServerRecord *r = &next->rec;
    r->server_id = req->server_id;
    r->datacenter = req->datacenter;
    r->address = req->address;
    r->port = req->port;
    r->capacity = req->capacity;
    r->version = req->version;
    size_t n = req->n_attributes < GF_WIRE_ATTRS_MAX ? req->n_attributes : GF_WIRE_ATTRS_MAX;
    for (size_t i = 0; i < n; i++)
        put_attr(next, i, req->attributes[i]->key, req->attributes[i]->value);
    end_attrs(next, n);
    bool has_match = old && old->allocated_match_id && old->allocated_match_id[0];
    if (!old) {
        r->registered_unix_ms = now_unix_ms;
        r->players = 0;
    }
    if (has_match) {
        r->state = GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED;
        r->free_since_unix_ms = 0;
    } else {
        bool was_free = old && old->state == GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE;
        r->state = GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE;
        r->free_since_unix_ms =
            was_free && old->free_since_unix_ms ? old->free_since_unix_ms : now_unix_ms;
        clear_allocation(r);
    }
    heard_from(r, now_unix_ms, heartbeat_timeout_ms);
}

void fleet_apply_release(const Gamefn__V1__ServerRecord *old, int64_t now_unix_ms, fleet_next *next)
{
    start_from(old, next);
    Gamefn__V1__ServerRecord *r = &next->rec;
    clear_allocation(r);
    if (old->state == GAMEFN__V1__SERVER_STATE__SERVER_STATE_DRAINING) {
        r->free_since_unix_ms = 0;
    } else {
        r->state = GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE;
        r->free_since_unix_ms = now_unix_ms;
    }
}

gf_err fleet_apply_heartbeat(const Gamefn__V1__ServerRecord *old,
                             const Gamefn__V1__HeartbeatRequest *req, int64_t now_unix_ms,
                             int64_t heartbeat_timeout_ms, fleet_next *next, fleet_game_over *g,
                             fleet_problem *p)
{
    g->released = NULL;
    g->undecided = false;
    if (req->players > old->capacity)
        return problem(p, GF_ERR_INVALID, 0, "players", "%u is above the capacity %u", req->players,
                       old->capacity);
    bool finished = req->finished_match_id && req->finished_match_id[0] &&
                    old->allocated_match_id &&
                    strcmp(req->finished_match_id, old->allocated_match_id) == 0;
    g->undecided = finished && (!g->decided || strcmp(g->decided, old->allocated_match_id) != 0);
    if (finished && !g->undecided) {
        fleet_apply_release(old, now_unix_ms, next);
        g->released = old->allocated_match_id;
    } else {
        start_from(old, next);
    }
    Gamefn__V1__ServerRecord *r = &next->rec;
    r->players = req->players;
    if (req->draining) {
        r->state = GAMEFN__V1__SERVER_STATE__SERVER_STATE_DRAINING;
        r->free_since_unix_ms = 0;
    }
    heard_from(r, now_unix_ms, heartbeat_timeout_ms);
    return GF_OK;
}

/* a and b would be stored as the same bytes but for the two liveness stamps. Comparing the
 * packed forms covers every field, those of a newer schema (kept as unknown fields) too. */
static bool same_but_liveness(const Gamefn__V1__ServerRecord *a, const Gamefn__V1__ServerRecord *b)
{
    Gamefn__V1__ServerRecord x = *a, y = *b;
    x.last_heartbeat_unix_ms = y.last_heartbeat_unix_ms = 0;
    x.stale_unix_ms = y.stale_unix_ms = 0;
    size_t n = gamefn__v1__server_record__get_packed_size(&x);
    if (n != gamefn__v1__server_record__get_packed_size(&y))
        return false;
    uint8_t *px = malloc(n + 1), *py = malloc(n + 1); /* no memory: not the same (write) */
    bool same = px && py && gamefn__v1__server_record__pack(&x, px) == n &&
                gamefn__v1__server_record__pack(&y, py) == n && memcmp(px, py, n) == 0;
    free(px);
    free(py);
    return same;
}

bool fleet_heartbeat_skips(const Gamefn__V1__ServerRecord *old,
                           const Gamefn__V1__HeartbeatRequest *req, int64_t now_unix_ms,
                           int64_t heartbeat_timeout_ms, int64_t refresh_ms)
{
    if (refresh_ms <= 0 || !old || (req->finished_match_id && req->finished_match_id[0]))
        return false;
    if (old->last_heartbeat_unix_ms > now_unix_ms ||
        old->stale_unix_ms <= now_unix_ms + heartbeat_timeout_ms - refresh_ms)
        return false;
    fleet_next next;
    fleet_game_over g = {.decided = NULL};
    fleet_problem p;
    if (fleet_apply_heartbeat(old, req, now_unix_ms, heartbeat_timeout_ms, &next, &g, &p) != GF_OK)
        return false; /* the write path refuses it, after a read */
    return same_but_liveness(old, &next.rec);
}

gf_err fleet_check_removal(const Gamefn__V1__ServerRecord *rec, Gamefn__V1__DeregisterReason reason,
                           const char **released, fleet_problem *p)
{
    bool has_match = rec->allocated_match_id && rec->allocated_match_id[0];
    *released = NULL;
    if (reason == GAMEFN__V1__DEREGISTER_REASON__DEREGISTER_REASON_HIBERNATE && has_match)
        return problem(p, GF_ERR_CONFLICT, GAMEFN__V1__ERROR_CODE__ERROR_CODE_FAILED_PRECONDITION,
                       "reason",
                       "server is running match %s; it can hibernate once the match is over",
                       rec->allocated_match_id);
    if (has_match)
        *released = rec->allocated_match_id;
    return GF_OK;
}

bool fleet_stale(const Gamefn__V1__ServerRecord *rec, int64_t now_unix_ms)
{
    return now_unix_ms >= rec->stale_unix_ms;
}

bool fleet_allocatable(const Gamefn__V1__ServerRecord *rec, size_t players, int64_t now_unix_ms)
{
    return rec->state == GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE &&
           !fleet_stale(rec, now_unix_ms) && players <= rec->capacity;
}

void fleet_apply_allocate(const Gamefn__V1__ServerRecord *old, const char *match_id,
                          char **player_ids, size_t n_players, char **ticket_ids, size_t n_tickets,
                          int64_t now_unix_ms, fleet_next *next)
{
    start_from(old, next);
    Gamefn__V1__ServerRecord *r = &next->rec;
    r->state = GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED;
    r->allocated_match_id = fleet_str(match_id);
    r->allocated_unix_ms = now_unix_ms;
    r->expected_player_ids = player_ids;
    r->n_expected_player_ids = n_players;
    r->allocated_ticket_ids = ticket_ids;
    r->n_allocated_ticket_ids = n_tickets;
    r->free_since_unix_ms = 0;
}
