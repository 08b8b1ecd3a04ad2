/*
 * ticket_cmd.c — `gamefn ticket create|get|cancel|watch`: a matchmaking client on the
 * command line, speaking docs/PROTOCOL.md §6 like a gateway does.
 *
 * Design notes: watch follows the protocol's client rules: subscribe to the status subject
 * first, then ticket.get once (a change made in between is not missed), keep the status
 * with the highest revision (on equal revisions the later updated_unix_ms), call
 * ticket.get again after 10 s of silence, stop at a terminal state. The NATS user needs
 * the gateway's permissions; its inbox prefix (--inbox-prefix, default _INBOX.gw here)
 * must be one the accounts file lets it subscribe to (deploy/nats/accounts.conf).
 */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cli.h"
#include "gamefn/clock.h"
#include "gamefn/subjects.h"
#include "gamefn/v1/ticket.pb-c.h"
#include "ticket_print.h"

const char gf_cli_ticket_help[] =
    "usage: gamefn ticket create --queue Q --player ID:RATING[:SIGMA]... --ping DC:MS...\n"
    "                            [--region R] [--attr KEY=VALUE]... [--key KEY] [--watch]\n"
    "       gamefn ticket get ID\n"
    "       gamefn ticket cancel ID\n"
    "       gamefn ticket watch ID\n"
    "       (each also takes --json and --timeout D)\n\n"
    "create   submits a ticket: one --player per party member (a party is kept whole), one\n"
    "         --ping per datacenter the players measured (a party gives its worst member's\n"
    "         ping). --key is the idempotency key (default: a random one); the same key\n"
    "         again returns the same ticket. Prints the ticket id and its status.\n"
    "get      the ticket's current status.\n"
    "cancel   cancels a QUEUED or CLAIMED ticket (an ASSIGNED one is refused, exit 7).\n"
    "watch    prints the status, then every change pushed on gamefn.v1.ticket.status.ID,\n"
    "         until a terminal state (ASSIGNED, CANCELLED, TIMED_OUT) or the timeout.\n\n"
    "  --json       JSON instead of text (watch: one object per line)\n"
    "  --timeout D  requests: answer within D (default 5s); watch and create --watch: a\n"
    "               terminal state within D (default 60s)\n\n"
    "The NATS user needs a gateway's permissions (docs/OPERATIONS.md, Permissions); the\n"
    "inbox prefix defaults to _INBOX.gw, which the accounts file lets gateways use.\n\n"
    "exit: 0 done (watch: a terminal state reached), 2 usage, 3 NATS unreachable,\n"
    "      4 unknown ticket, queue, datacenter or region, 5 timeout, 6 intake not running,\n"
    "      7 refused (invalid request, cancel of an assigned ticket, permissions)\n";

typedef struct topts {
    bool json, watch;
    int64_t timeout_ms; /* 0: the default for the subcommand */
    const char *queue, *region, *key;
    Gamefn__V1__PartyMember members[16], *memberp[16];
    size_t nmembers;
    Gamefn__V1__DatacenterPing pings[32], *pingp[32];
    size_t npings;
    Gamefn__V1__CreateTicketRequest__AttributesEntry attrs[16], *attrp[16];
    size_t nattrs;
} topts;

static bool token_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* "ID:RATING[:SIGMA]" (the id itself may not hold ':'). */
static bool parse_player(topts *o, char *arg)
{
    char *rating = strchr(arg, ':');
    if (!rating || o->nmembers == 16)
        return false;
    *rating++ = 0;
    char *sigma = strchr(rating, ':'), *end = NULL;
    if (sigma)
        *sigma++ = 0;
    Gamefn__V1__PartyMember *m = &o->members[o->nmembers];
    *m = (Gamefn__V1__PartyMember)GAMEFN__V1__PARTY_MEMBER__INIT;
    m->player_id = arg;
    m->rating = strtod(rating, &end);
    if (!arg[0] || end == rating || *end)
        return false;
    if (sigma) {
        m->sigma = strtod(sigma, &end);
        if (end == sigma || *end)
            return false;
    }
    o->memberp[o->nmembers] = m;
    o->nmembers++;
    return true;
}

static bool parse_ping(topts *o, char *arg)
{
    char *ms = strrchr(arg, ':'), *end = NULL;
    if (!ms || o->npings == 32)
        return false;
    *ms++ = 0;
    long v = strtol(ms, &end, 10);
    if (!arg[0] || end == ms || *end || v < 0 || v > 100000)
        return false;
    Gamefn__V1__DatacenterPing *p = &o->pings[o->npings];
    *p = (Gamefn__V1__DatacenterPing)GAMEFN__V1__DATACENTER_PING__INIT;
    p->datacenter = arg;
    p->ping_ms = (uint32_t)v;
    o->pingp[o->npings++] = p;
    return true;
}

static bool parse_attr(topts *o, char *arg)
{
    char *eq = strchr(arg, '=');
    if (!eq || o->nattrs == 16)
        return false;
    *eq = 0;
    Gamefn__V1__CreateTicketRequest__AttributesEntry *a = &o->attrs[o->nattrs];
    *a = (Gamefn__V1__CreateTicketRequest__AttributesEntry)
        GAMEFN__V1__CREATE_TICKET_REQUEST__ATTRIBUTES_ENTRY__INIT;
    a->key = arg;
    a->value = eq + 1;
    o->attrp[o->nattrs++] = a;
    return true;
}

/* Options of `ticket <sub>`; the positional arguments stay in argv[optind..]. */
static int parse(const char *sub, int argc, char **argv, topts *o)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},          {"watch", no_argument, NULL, 'w'},
        {"timeout", required_argument, NULL, 't'}, {"queue", required_argument, NULL, 'q'},
        {"player", required_argument, NULL, 'p'},  {"ping", required_argument, NULL, 'g'},
        {"region", required_argument, NULL, 'r'},  {"attr", required_argument, NULL, 'a'},
        {"key", required_argument, NULL, 'k'},     {NULL, 0, NULL, 0},
    };
    bool create = strcmp(sub, "create") == 0;
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (!create && strchr("wqpgrak", c))
            return gf_cli_usage_error("ticket", "%s takes no such option", sub);
        switch (c) {
        case 'j':
            o->json = true;
            break;
        case 'w':
            o->watch = true;
            break;
        case 't':
            if (!gf_cli_duration("ticket", "--timeout", optarg, 1, 24 * 3600 * 1000LL,
                                 &o->timeout_ms))
                return GF_CLI_USAGE;
            break;
        case 'q':
            o->queue = optarg;
            break;
        case 'r':
            o->region = optarg;
            break;
        case 'k':
            o->key = optarg;
            break;
        case 'p':
            if (!parse_player(o, optarg))
                return gf_cli_usage_error("ticket", "--player takes ID:RATING[:SIGMA] (at most "
                                                    "16), e.g. p-1:1500");
            break;
        case 'g':
            if (!parse_ping(o, optarg))
                return gf_cli_usage_error("ticket", "--ping takes DATACENTER:MS (at most 32), "
                                                    "e.g. eu-west:20");
            break;
        case 'a':
            if (!parse_attr(o, optarg))
                return gf_cli_usage_error("ticket", "--attr takes KEY=VALUE (at most 16)");
            break;
        default:
            return gf_cli_usage_error("ticket", "unknown option");
        }
    }
    if (create && optind < argc)
        return gf_cli_usage_error("ticket", "unexpected argument '%s'", argv[optind]);
    if (create && (!o->queue || !o->nmembers || !o->npings))
        return gf_cli_usage_error("ticket", "create needs --queue, at least one --player and "
                                            "at least one --ping");
    if (!create && argc - optind != 1)
        return gf_cli_usage_error("ticket", "%s takes one ticket id", sub);
    if (!create && !token_ok(argv[optind], 64))
        return gf_cli_usage_error("ticket", "'%s' is not a ticket id (1..64 of A-Z a-z 0-9 _ -)",
                                  argv[optind]);
    return GF_CLI_OK;
}

/* ticket.get or ticket.cancel: the reply's status (*out, free with the reply). */
static int id_request(natsConnection *nc, const char *subject, const char *id, int64_t timeout,
                      Gamefn__V1__GetTicketReply **out)
{
    Gamefn__V1__GetTicketRequest r = GAMEFN__V1__GET_TICKET_REQUEST__INIT; /* = cancel's */
    r.ticket_id = (char *)(uintptr_t)id;
    /* GetTicketReply and CancelTicketReply are both {status = 1}. */
    return gf_cli_request(nc, "ticket", subject, &r.base, &gamefn__v1__get_ticket_reply__descriptor,
                          timeout, (ProtobufCMessage **)out, NULL, NULL, 0);
}

/* A deep copy (pack, unpack); NULL when memory runs out. */
static Gamefn__V1__TicketStatus *copy_status(const Gamefn__V1__TicketStatus *st)
{
    size_t n = gamefn__v1__ticket_status__get_packed_size(st);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return NULL;
    gamefn__v1__ticket_status__pack(st, buf);
    Gamefn__V1__TicketStatus *copy = gamefn__v1__ticket_status__unpack(NULL, n, buf);
    free(buf);
    return copy;
}

static bool newer(const Gamefn__V1__TicketStatus *a, const Gamefn__V1__TicketStatus *best)
{
    if (!best)
        return true;
    if (a->revision != best->revision)
        return a->revision > best->revision;
    return a->updated_unix_ms > best->updated_unix_ms;
}

/* Prints every newer status of ticket `id` until a terminal state or the deadline. `sub`
 * was subscribed to its status subject before anything was asked. */
static int watch(natsConnection *nc, natsSubscription *sub, const char *id, const topts *o)
{
    int64_t deadline = gf_clock_mono_ms() + (o->timeout_ms ? o->timeout_ms : 60000);
    Gamefn__V1__TicketStatus *best = NULL;
    Gamefn__V1__GetTicketReply *got = NULL;
    int rc = id_request(nc, GF_WIRE_SUBJ_TICKET_GET, id, 5000, &got);
    if (rc != GF_CLI_OK)
        return rc;
    int64_t heard = gf_clock_mono_ms();
    for (;;) {
        Gamefn__V1__TicketStatus *st = got ? got->status : NULL;
        natsMsg *m = NULL;
        Gamefn__V1__TicketStatus *pushed = NULL;
        if (!st) {
            int64_t left = deadline - gf_clock_mono_ms();
            if (left <= 0)
                break;
            int64_t wait = left < 1000 ? left : 1000;
            if (natsSubscription_NextMsg(&m, sub, wait) == NATS_OK) {
                pushed = gamefn__v1__ticket_status__unpack(NULL, (size_t)natsMsg_GetDataLength(m),
                                                           (const uint8_t *)natsMsg_GetData(m));
                natsMsg_Destroy(m);
                st = pushed;
                heard = gf_clock_mono_ms();
            } else if (gf_clock_mono_ms() - heard >= 10000) {
                heard = gf_clock_mono_ms(); /* silence: ask again (PROTOCOL.md §6) */
                if (id_request(nc, GF_WIRE_SUBJ_TICKET_GET, id, 5000, &got) == GF_CLI_OK)
                    st = got->status;
            }
        }
        if (st && newer(st, best)) {
            gf_cli_status_print(st, o->json, true);
            Gamefn__V1__TicketStatus *copy = copy_status(st);
            if (copy) {
                if (best)
                    gamefn__v1__ticket_status__free_unpacked(best, NULL);
                best = copy;
            }
        }
        if (got) {
            gamefn__v1__get_ticket_reply__free_unpacked(got, NULL);
            got = NULL;
        }
        if (pushed)
            gamefn__v1__ticket_status__free_unpacked(pushed, NULL);
        if (best && gf_cli_state_terminal(best->state))
            break;
    }
    rc = best && gf_cli_state_terminal(best->state) ? GF_CLI_OK : GF_CLI_TIMEOUT;
    if (rc == GF_CLI_TIMEOUT)
        fprintf(stderr, "gamefn ticket: %s reached no terminal state within %lld ms (last: %s)\n",
                id, (long long)(o->timeout_ms ? o->timeout_ms : 60000),
                best ? gf_cli_state_name(best->state) : "none");
    if (best)
        gamefn__v1__ticket_status__free_unpacked(best, NULL);
    return rc;
}

static int subscribe_status(natsConnection *nc, const char *id, natsSubscription **sub)
{
    char subject[160];
    snprintf(subject, sizeof subject, "%s.%s", GF_WIRE_SUBJ_TICKET_STATUS, id);
    natsStatus s = natsConnection_SubscribeSync(sub, nc, subject);
    if (s == NATS_OK)
        s = natsConnection_Flush(nc);
    if (s != NATS_OK) {
        fprintf(stderr, "gamefn ticket: cannot subscribe to %s: %s\n", subject,
                natsStatus_GetText(s));
        return GF_CLI_REFUSED;
    }
    return GF_CLI_OK;
}

static int create(natsConnection *nc, topts *o)
{
    char key[40];
    if (!o->key) {
        unsigned char r[16];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            fprintf(stderr, "gamefn ticket: no random bytes for a key; give --key\n");
            return GF_CLI_FAILED;
        }
        for (size_t i = 0; i < sizeof r; i++)
            snprintf(key + 2 * i, 3, "%02x", r[i]);
        o->key = key;
    }
    Gamefn__V1__CreateTicketRequest req = GAMEFN__V1__CREATE_TICKET_REQUEST__INIT;
    req.idempotency_key = (char *)(uintptr_t)o->key;
    req.queue = (char *)(uintptr_t)o->queue;
    req.region = (char *)(uintptr_t)(o->region ? o->region : "");
    req.n_members = o->nmembers;
    req.members = o->memberp;
    req.n_pings = o->npings;
    req.pings = o->pingp;
    req.n_attributes = o->nattrs;
    req.attributes = o->attrp;
    Gamefn__V1__CreateTicketReply *reply = NULL;
    int rc = gf_cli_request(nc, "ticket", GF_WIRE_SUBJ_TICKET_CREATE, &req.base,
                            &gamefn__v1__create_ticket_reply__descriptor,
                            o->watch ? 5000 : (o->timeout_ms ? o->timeout_ms : 5000),
                            (ProtobufCMessage **)&reply, NULL, NULL, 0);
    if (rc != GF_CLI_OK)
        return rc;
    gf_cli_created_print(reply, o->key, o->json);
    if (o->watch && reply->ticket_id && token_ok(reply->ticket_id, 64)) {
        natsSubscription *sub = NULL;
        rc = subscribe_status(nc, reply->ticket_id, &sub);
        if (rc == GF_CLI_OK)
            rc = watch(nc, sub, reply->ticket_id, o);
        natsSubscription_Destroy(sub);
    }
    gamefn__v1__create_ticket_reply__free_unpacked(reply, NULL);
    return rc;
}

int gf_cli_ticket(gf_cli *cli, int argc, char **argv)
{
    if (argc < 2)
        return gf_cli_usage_error("ticket", "which one: create, get, cancel or watch?");
    const char *sub = argv[1];
    if (strcmp(sub, "create") && strcmp(sub, "get") && strcmp(sub, "cancel") &&
        strcmp(sub, "watch"))
        return gf_cli_usage_error("ticket", "unknown subcommand '%s' (create, get, cancel, watch)",
                                  sub);
    topts o;
    memset(&o, 0, sizeof o);
    int rc = parse(sub, argc - 1, argv + 1, &o);
    if (rc != GF_CLI_OK)
        return rc;
    const char *id = strcmp(sub, "create") ? argv[1 + optind] : NULL;
    if (!cli->inbox_prefix && !cli->cfg->nats.inbox_prefix)
        cli->inbox_prefix = "_INBOX.gw";
    gf_conn *conn = NULL;
    rc = gf_cli_connect(cli, "ticket", &conn);
    if (rc != GF_CLI_OK)
        return rc;
    natsConnection *nc = gf_conn_nats(conn);
    int64_t timeout = o.timeout_ms ? o.timeout_ms : 5000;
    if (strcmp(sub, "create") == 0) {
        rc = create(nc, &o);
    } else if (strcmp(sub, "watch") == 0) {
        natsSubscription *s = NULL;
        rc = subscribe_status(nc, id, &s);
        if (rc == GF_CLI_OK)
            rc = watch(nc, s, id, &o);
        natsSubscription_Destroy(s);
    } else {
        Gamefn__V1__GetTicketReply *reply = NULL;
        rc = id_request(
            nc, strcmp(sub, "get") == 0 ? GF_WIRE_SUBJ_TICKET_GET : GF_WIRE_SUBJ_TICKET_CANCEL, id,
            timeout, &reply);
        if (rc == GF_CLI_OK) {
            if (reply->status)
                gf_cli_status_print(reply->status, o.json, false);
            gamefn__v1__get_ticket_reply__free_unpacked(reply, NULL);
        }
    }
    gf_conn_close(conn, 1000);
    return rc;
}
