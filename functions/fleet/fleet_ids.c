/*
 * fleet_ids.c — one datacenter per server id (docs/PROTOCOL.md §8): the index key
 * "ids/<server_id>" (fleet_record.h) in the fleet bucket names the datacenter whose
 * record holds the id. A register claims it before it writes its record; a deregister
 * and the sweep release it after they removed the record.
 *
 * Design notes: the index is the one place where two registers of the same id in two
 * datacenters meet, so it is written only by create-if-absent or compare-and-set; the
 * loser of that race reads the index again and is refused. A register that claims the
 * id afresh (no index, or one whose datacenter's record is gone) then also looks for the
 * id under every other configured datacenter, so a record the index does not know of
 * (written before this rule, or whose index was released by a deregister racing a
 * register in the same datacenter) still refuses it. A register in the index's own
 * datacenter rewrites the index (its claim time), so a release racing it loses its
 * compare-and-set instead of removing the claim of a record about to be written.
 * An index whose datacenter holds no record is taken over only once it is older than
 * heartbeat_timeout: until then its register may still be writing that record. Past
 * that, the sweep removes it (fleet_ids_remove_orphan, by the same rule, judge_claim):
 * a fleet killed between a record's delete and the index's release, or a register
 * killed between its claim and its record, leaves one, and with servers that get a
 * new id every boot nothing else would ever remove them. Its delete is a
 * compare-and-set on the revision read, so a register that claimed it again wins.
 * Threads: any handler thread; nothing shared but the kvStore.
 */
#include <stdio.h>
#include <string.h>

#include "fleet_fn.h"
#include "fleet_store.h"
#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "gamefn/publish.h"
#include "gamefn/v1/error.pb-c.h"

enum { CLAIM_ATTEMPTS = 8 };

/* The index as read: revision 0 = absent; ok false = a value that is not an index. */
typedef struct id_claim {
    uint64_t revision;
    bool ok;
    char datacenter[GF_WIRE_NAME_MAX + 1];
    int64_t claimed_unix_ms;
} id_claim;

static gf_err read_claim(fleet_state *st, const char *key, id_claim *c)
{
    kvEntry *e = NULL;
    memset(c, 0, sizeof *c);
    gf_err err = gf_kv_get(st->fleet_kv, key, &e);
    if (err == GF_ERR_NOT_FOUND)
        return GF_OK;
    if (err != GF_OK)
        return err;
    c->revision = kvEntry_Revision(e);
    c->ok = fleet_id_parse(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), c->datacenter,
                           &c->claimed_unix_ms);
    kvEntry_Destroy(e);
    return GF_OK;
}

/* Writes the claim of `dc` over revision `last` (0 = create); *rev = its revision. The
 * bucket full: GF_ERR_NATS with *p saying so (fleet_store_full). */
static gf_err write_claim(fleet_state *st, const char *key, const char *dc, int64_t now,
                          uint64_t last, uint64_t *rev, fleet_problem *p)
{
    char value[FLEET_ID_VALUE_MAX];
    size_t len = fleet_id_value(dc, now, value);
    int js_code = 0;
    gf_err err = gf_kv_put_if(st->js, st->fleet_kv, key, value, len, last, rev, &js_code);
    return gf_publish_full(err, js_code) ? fleet_store_full_problem(p, js_code) : err;
}

static gf_err refuse_id(fleet_problem *p, const char *server_id, const char *dc, const char *how)
{
    p->err = GF_ERR_CONFLICT;
    p->code = GAMEFN__V1__ERROR_CODE__ERROR_CODE_FAILED_PRECONDITION;
    snprintf(p->field, sizeof p->field, "server_id");
    snprintf(p->text, sizeof p->text,
             "server_id: %s %s in datacenter %s; a server id is unique across the fleet "
             "(deregister it there first)",
             server_id, how, dc);
    return p->err;
}

/* Does the record `<dc>.<server_id>` exist (valid or not)? */
static gf_err record_exists(fleet_state *st, const char *dc, const char *server_id, bool *exists,
                            bool *stale)
{
    char key[FLEET_KEY_MAX];
    fleet_written w = {0};
    fleet_problem ignored = {0};
    *exists = *stale = false;
    if (!fleet_key(dc, server_id, key))
        return GF_OK;
    gf_err err = fleet_store_get(st->fleet_kv, key, &w, &ignored);
    if (err == GF_OK || (err == GF_ERR_INVALID && w.revision)) {
        *exists = true;
        *stale = err == GF_OK && fleet_stale(w.rec, gf_clock_unix_ms());
        err = GF_OK;
    } else if (err == GF_ERR_NOT_FOUND) {
        err = GF_OK;
    }
    fleet_written_fini(&w);
    return err;
}

/* What a claim `c` (read, an index value) of `server_id` is worth to anyone but its own
 * datacenter: the one rule for a register taking it over and the sweep removing it. */
typedef enum claim_state {
    CLAIM_HELD,       /* its datacenter holds a record of the id */
    CLAIM_HELD_STALE, /* ... a stale one (the sweep removes it, then releases the index) */
    CLAIM_YOUNG,      /* no record, but claimed less than heartbeat_timeout ago: its
                         register may still be writing it */
    CLAIM_ABANDONED,  /* no record, claimed longer ago: orphaned */
} claim_state;

static gf_err judge_claim(fleet_state *st, const id_claim *c, const char *server_id, int64_t now,
                          claim_state *out)
{
    bool exists = false, stale = false;
    gf_err err = record_exists(st, c->datacenter, server_id, &exists, &stale);
    if (err != GF_OK)
        return err;
    if (exists)
        *out = stale ? CLAIM_HELD_STALE : CLAIM_HELD;
    else if (now - c->claimed_unix_ms < st->cfg->heartbeat_timeout_ms)
        *out = CLAIM_YOUNG;
    else
        *out = CLAIM_ABANDONED;
    return GF_OK;
}

/* After a fresh claim at `rev`: the id must be under no other configured datacenter. */
static gf_err check_others(fleet_state *st, const char *key, uint64_t rev, const char *dc,
                           const char *server_id, fleet_problem *p)
{
    for (size_t i = 0; i < st->cfg->datacenters_len; i++) {
        const char *other = st->cfg->datacenters[i].name;
        bool exists = false, stale = false;
        if (strcmp(other, dc) == 0)
            continue;
        gf_err err = record_exists(st, other, server_id, &exists, &stale);
        if (err == GF_OK && !exists)
            continue;
        gf_kv_delete_if(st->js, st->fleet_kv, key, rev, NULL); /* not ours after all */
        if (err != GF_OK)
            return err;
        return refuse_id(p, server_id, other, stale ? "is registered (stale)" : "is registered");
    }
    return GF_OK;
}

gf_err fleet_ids_claim(fleet_state *st, const char *dc, const char *server_id, int64_t now,
                       fleet_problem *p)
{
    char key[FLEET_KEY_MAX];
    if (!fleet_id_key(server_id, key))
        return GF_ERR_INVALID; /* checked before: cannot happen */
    for (int attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
        id_claim c;
        uint64_t rev = 0;
        gf_err err = read_claim(st, key, &c);
        if (err != GF_OK)
            return err;
        bool fresh = true;
        if (c.revision && c.ok && strcmp(c.datacenter, dc) == 0) {
            fresh = false; /* ours: refresh the claim */
        } else if (c.revision && c.ok) {
            claim_state cs = CLAIM_ABANDONED;
            err = judge_claim(st, &c, server_id, now, &cs);
            if (err != GF_OK)
                return err;
            if (cs == CLAIM_HELD || cs == CLAIM_HELD_STALE)
                return refuse_id(p, server_id, c.datacenter,
                                 cs == CLAIM_HELD_STALE
                                     ? "is registered (stale: removed by the sweep soon)"
                                     : "is registered");
            if (cs == CLAIM_YOUNG)
                return refuse_id(p, server_id, c.datacenter, "is being registered");
        } /* else absent, or not an index value: claim it */
        err = write_claim(st, key, dc, now, c.revision, &rev, p);
        if (err == GF_ERR_CONFLICT)
            continue;
        if (err != GF_OK)
            return err;
        return fresh ? check_others(st, key, rev, dc, server_id, p) : GF_OK;
    }
    return GF_ERR_CONFLICT;
}

void fleet_ids_release(fleet_state *st, const char *dc, const char *server_id)
{
    char key[FLEET_KEY_MAX];
    id_claim c;
    if (!fleet_id_key(server_id, key) || read_claim(st, key, &c) != GF_OK || !c.revision)
        return;
    if (c.ok && strcmp(c.datacenter, dc) != 0)
        return; /* another datacenter's claim (taken over): not ours to release */
    gf_err err = gf_kv_delete_if(st->js, st->fleet_kv, key, c.revision, NULL);
    if (err != GF_OK && err != GF_ERR_CONFLICT)
        gf_log_warn("server id index not released", "key=%s err=%s", key, gf_err_str(err));
}

gf_err fleet_ids_remove_orphan(fleet_state *st, const char *key, int64_t now)
{
    id_claim c;
    claim_state cs = CLAIM_HELD;
    int full = 0;
    const char *server_id = key + sizeof FLEET_ID_PREFIX - 1;
    if (!fleet_is_id_key(key))
        return GF_ERR_INVALID;
    gf_err err = read_claim(st, key, &c);
    if (err != GF_OK || !c.revision || !c.ok)
        return err; /* gone, or not an index value: left alone */
    err = judge_claim(st, &c, server_id, now, &cs);
    if (err != GF_OK || cs != CLAIM_ABANDONED)
        return err;
    err = fleet_store_delete(st->js, st->fleet_kv, key, c.revision, &full);
    if (err == GF_ERR_CONFLICT)
        return GF_OK; /* claimed again meanwhile (its register wins), or removed by another */
    if (full) {
        fleet_full_note(st, full, "removing an orphan server-id index", key);
        return GF_OK; /* logged there; the next sweep tries again */
    }
    if (err != GF_OK)
        return err;
    fleet_mirror_note(st->mirror, key, c.revision + 1, NULL, 0);
    gf_log_info("orphan server-id index removed", "key=%s datacenter=%s claimed_unix_ms=%lld", key,
                c.datacenter, (long long)c.claimed_unix_ms);
    return GF_OK;
}
