/* simstack.c — see simstack.h. */
#include "simstack.h"

#include <stdio.h>
#include <string.h>

#include "gamefn/config.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"
#include "join_sign.h"
#include "proc.h"

static const char config_template[] =
    "nats:\n"
    "  servers: [\"%s\"]\n"
    "  reconnect_wait: 100ms\n"
    "  reconnect_jitter: 50ms\n"
    "  reconnect_max_wait: 500ms\n"
    "  flush: %s\n"
    "log:\n"
    "  level: %s\n"
    "runtime:\n"
    "  drain_timeout: 5s\n"
    "  fetch_batch: %d\n"
    "  max_in_flight: %d\n"
    "  fetch_expiry: %s\n"
    "  heartbeat: 250ms\n"
    "jetstream:\n"
    "  streams:\n"
    "    - name: MATCHES\n"
    "      subjects: [\"gamefn.v1.match.found.>\"]\n"
    "      retention: workqueue\n"
    "      max_age: 1h\n"
    "      duplicate_window: 2m\n"
    "    - {name: AUDIT_TICKETS, mirror: KV_tickets, allow_direct: true}\n"
    "    - {name: AUDIT_MATCHES, mirror: KV_matches}\n"
    "    - {name: AUDIT_PLAYERS, mirror: KV_players}\n"
    "  consumers:\n"
    "    - stream: MATCHES\n"
    "      name: allocator\n"
    "      ack_wait: 30s\n"
    "      max_deliver: 5\n"
    "      max_ack_pending: 10000\n"
    "      backoff: %s\n"
    "  buckets:\n"
    "    - {name: tickets, history: 64, ttl: 1h}\n"
    "    - {name: fleet}\n"
    "    - {name: players, history: 64}\n"
    "    - {name: matches, ttl: 1d}\n"
    "    - {name: leases}\n"
    "functions:\n"
    "  fleet:\n"
    "    heartbeat_interval: %s\n"
    "    heartbeat_timeout: %lldms\n"
    "    scale_interval: %s\n"
    "    datacenters: [%s]\n"
    "    join_keys:\n"
    "      - {key_id: test, public_key: \"%s/test.pub\"}\n"
    "%s"
    "  allocator:\n"
    "    signing_key: \"%s/test.key\"\n"
    "    key_id: test\n"
    "    deadline: %s\n"
    "    wait_slice: 20ms\n"
    "%s"
    "%s";

int gf_simstack_write(const gf_simstack_opts *o, const char *config_path, uint8_t pk[32])
{
    char sk_path[600], pk_path[600];
    snprintf(sk_path, sizeof sk_path, "%s/test.key", o->dir);
    snprintf(pk_path, sizeof pk_path, "%s/test.pub", o->dir);
    if (gf_join_keygen(sk_path, pk_path, pk) != GF_OK) {
        fprintf(stderr, "simstack: cannot write the key pair in %s\n", o->dir);
        return -1;
    }
    FILE *f = fopen(config_path, "w");
    if (!f) {
        fprintf(stderr, "simstack: cannot write %s\n", config_path);
        return -1;
    }
    int64_t interval_ms = 500, timeout_ms = 0;
    if ((o->heartbeat && gf_config_parse_duration_ms(o->heartbeat, &interval_ms) != GF_OK) ||
        (o->heartbeat_timeout &&
         gf_config_parse_duration_ms(o->heartbeat_timeout, &timeout_ms) != GF_OK)) {
        fprintf(stderr, "simstack: bad heartbeat %s or heartbeat timeout %s\n",
                o->heartbeat ? o->heartbeat : "-",
                o->heartbeat_timeout ? o->heartbeat_timeout : "-");
        fclose(f);
        return -1;
    }
    if (!o->heartbeat_timeout)
        timeout_ms = 3 * interval_ms;
    fprintf(f, config_template, o->url, o->flush ? o->flush : "immediate",
            o->log_level ? o->log_level : "info", o->max_in_flight > 0 ? o->max_in_flight : 8,
            o->max_in_flight > 0 ? o->max_in_flight : 8, o->fetch_expiry ? o->fetch_expiry : "1s",
            o->backoff ? o->backoff : "[2s, 2s, 5s]", o->heartbeat ? o->heartbeat : "500ms",
            (long long)timeout_ms, o->scale_interval ? o->scale_interval : "200ms",
            o->datacenters ? o->datacenters : "{name: eu, floor: 0}, {name: us, floor: 0}", o->dir,
            o->fleet_extra ? o->fleet_extra : "", o->dir, o->deadline ? o->deadline : "500ms",
            o->allocator_extra ? o->allocator_extra : "",
            o->functions_extra ? o->functions_extra : "");
    return fclose(f) == 0 ? 0 : -1;
}

int gf_simstack_provision(const char *build_dir, const char *config_path, const char *log_path)
{
    char bin[600], path[600];
    snprintf(bin, sizeof bin, "%s/tools/gamefn", build_dir);
    snprintf(path, sizeof path, "%s", config_path);
    char *argv[] = {bin, "--config", path, "provision", NULL};
    gf_proc p = {0};
    if (gf_proc_spawn(&p, argv, NULL, log_path) != 0 || gf_proc_wait(&p, 30000) != 0 ||
        !gf_proc_exited_with(&p, 0)) {
        gf_proc_dump_log(&p, 20);
        gf_proc_cleanup(&p);
        fprintf(stderr, "simstack: provisioning failed\n");
        return -1;
    }
    return 0;
}

static char *unconst(const char *s)
{
    return (char *)(uintptr_t)s;
}

size_t gf_simstack_record(const gf_simstack_rec *r, uint8_t *buf)
{
    char player[80];
    snprintf(player, sizeof player, "p-%s", r->ticket_id);
    Gamefn__V1__PartyMember pm = GAMEFN__V1__PARTY_MEMBER__INIT;
    Gamefn__V1__PartyMember *members[] = {&pm};
    pm.player_id = r->player_id ? unconst(r->player_id) : player;
    pm.rating = r->rating;
    Gamefn__V1__DatacenterPing p1 = GAMEFN__V1__DATACENTER_PING__INIT,
                               p2 = GAMEFN__V1__DATACENTER_PING__INIT;
    Gamefn__V1__DatacenterPing *pings[] = {&p1, &p2};
    p1.datacenter = "eu";
    p1.ping_ms = 20;
    p2.datacenter = "us";
    p2.ping_ms = 90;
    Gamefn__V1__Claim claim = GAMEFN__V1__CLAIM__INIT;
    Gamefn__V1__Assignment a = GAMEFN__V1__ASSIGNMENT__INIT;
    Gamefn__V1__TicketRecord t = GAMEFN__V1__TICKET_RECORD__INIT;
    t.ticket_id = unconst(r->ticket_id);
    t.idempotency_key = unconst(r->ticket_id);
    t.queue = "duel";
    t.members = members;
    t.n_members = 1;
    t.pings = pings;
    t.n_pings = 2;
    t.region = "eu";
    t.state = r->state;
    t.created_unix_ms = r->queued_ms;
    t.queued_unix_ms = r->queued_ms;
    t.updated_unix_ms = r->now_ms;
    t.expires_unix_ms = r->expires_ms ? r->expires_ms : r->now_ms + 600000;
    if (r->state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_CLAIMED) {
        claim.matcher_id = "sim-matcher";
        claim.match_id = unconst(r->match_id);
        claim.lease_expires_unix_ms = r->lease_ms ? r->lease_ms : r->now_ms + 60000;
        claim.claimed_unix_ms = r->now_ms;
        t.claim = &claim;
        t.reason = GAMEFN__V1__TICKET_REASON__TICKET_REASON_MATCHED;
    } else if (r->state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED) {
        a.match_id = unconst(r->match_id);
        a.ticket_id = unconst(r->ticket_id);
        a.server_id = "sim-server";
        a.datacenter = unconst(r->datacenter ? r->datacenter : "eu");
        a.address = "127.0.0.1";
        a.port = 7000;
        a.assigned_unix_ms = r->now_ms;
        t.assignment = &a;
        t.reason = GAMEFN__V1__TICKET_REASON__TICKET_REASON_MATCHED;
    }
    return gamefn__v1__ticket_record__pack(&t, buf);
}

size_t gf_simstack_ticket(const char *ticket_id, const char *match_id, int64_t queued_ms,
                          int64_t now_ms, uint8_t *buf)
{
    gf_simstack_rec r = {.ticket_id = ticket_id,
                         .rating = 1500,
                         .state = GAMEFN__V1__TICKET_STATE__TICKET_STATE_CLAIMED,
                         .match_id = match_id,
                         .queued_ms = queued_ms,
                         .now_ms = now_ms};
    return gf_simstack_record(&r, buf);
}

size_t gf_simstack_match(const char *match_id, char *const *tickets, size_t n,
                         const char *datacenters, int64_t now_ms, uint8_t *buf)
{
    enum { MAX_TICKETS = 16, MAX_DCS = 8 };
    Gamefn__V1__Team team[MAX_TICKETS], *teams[MAX_TICKETS];
    Gamefn__V1__MatchTicket mt[MAX_TICKETS], *mts[MAX_TICKETS];
    char players[MAX_TICKETS][80], *player_ptr[MAX_TICKETS];
    Gamefn__V1__DatacenterChoice dc[MAX_DCS], *dcs[MAX_DCS];
    char names[256];
    if (n > MAX_TICKETS)
        n = MAX_TICKETS;
    for (size_t i = 0; i < n; i++) {
        Gamefn__V1__MatchTicket t = GAMEFN__V1__MATCH_TICKET__INIT;
        snprintf(players[i], sizeof players[i], "p-%s", tickets[i]);
        player_ptr[i] = players[i];
        t.ticket_id = tickets[i];
        t.player_ids = &player_ptr[i];
        t.n_player_ids = 1;
        t.rating = 1500;
        mt[i] = t;
        mts[i] = &mt[i];
        Gamefn__V1__Team tm = GAMEFN__V1__TEAM__INIT;
        tm.tickets = &mts[i];
        tm.n_tickets = 1;
        team[i] = tm;
        teams[i] = &team[i];
    }
    snprintf(names, sizeof names, "%s", datacenters);
    size_t nd = 0;
    for (char *save = NULL, *d = strtok_r(names, ",", &save); d && nd < MAX_DCS;
         d = strtok_r(NULL, ",", &save)) {
        Gamefn__V1__DatacenterChoice c = GAMEFN__V1__DATACENTER_CHOICE__INIT;
        c.datacenter = d;
        c.max_ping_ms = 20;
        dc[nd] = c;
        dcs[nd] = &dc[nd];
        nd++;
    }
    Gamefn__V1__Match m = GAMEFN__V1__MATCH__INIT;
    m.match_id = unconst(match_id);
    m.queue = "duel";
    m.region = "eu";
    m.teams = teams;
    m.n_teams = n;
    m.datacenters = dcs;
    m.n_datacenters = nd;
    m.created_unix_ms = now_ms;
    m.matcher_id = "sim-matcher";
    m.claim_expires_unix_ms = now_ms + 60000;
    return gamefn__v1__match__pack(&m, buf);
}
