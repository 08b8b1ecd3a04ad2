/* ticket_print.c — see ticket_print.h. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ticket_print.h"

/* The value's name without its enum prefix ("TICKET_STATE_QUEUED" -> "QUEUED"). */
static const char *enum_name(const ProtobufCEnumDescriptor *d, int v, const char *prefix)
{
    const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(d, v);
    if (!e)
        return "UNKNOWN";
    size_t n = strlen(prefix);
    return strncmp(e->name, prefix, n) == 0 ? e->name + n : e->name;
}

const char *gf_cli_state_name(int state)
{
    return enum_name(&gamefn__v1__ticket_state__descriptor, state, "TICKET_STATE_");
}

const char *gf_cli_reason_name(int reason)
{
    return enum_name(&gamefn__v1__ticket_reason__descriptor, reason, "TICKET_REASON_");
}

bool gf_cli_state_terminal(int state)
{
    return state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED ||
           state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_CANCELLED ||
           state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_TIMED_OUT;
}

static json_t *assignment_json(const Gamefn__V1__Assignment *a)
{
    json_t *players = json_array();
    for (size_t i = 0; i < a->n_tokens; i++)
        json_array_append_new(players,
                              json_string(a->tokens[i]->player_id ? a->tokens[i]->player_id : ""));
    return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:o}", "match_id",
                     a->match_id ? a->match_id : "", "server_id", a->server_id ? a->server_id : "",
                     "datacenter", a->datacenter ? a->datacenter : "", "address",
                     a->address ? a->address : "", "port", (int)a->port, "team", (int)a->team,
                     "assigned_unix_ms", (json_int_t)a->assigned_unix_ms, "expires_unix_ms",
                     (json_int_t)a->expires_unix_ms, "token_players", players);
}

json_t *gf_cli_status_json(const Gamefn__V1__TicketStatus *st)
{
    json_t *j = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:i}", "ticket_id",
        st->ticket_id ? st->ticket_id : "", "state", gf_cli_state_name(st->state), "reason",
        gf_cli_reason_name(st->reason), "detail", st->detail ? st->detail : "", "queue",
        st->queue ? st->queue : "", "revision", (json_int_t)st->revision, "queued_unix_ms",
        (json_int_t)st->queued_unix_ms, "updated_unix_ms", (json_int_t)st->updated_unix_ms,
        "expires_unix_ms", (json_int_t)st->expires_unix_ms, "match_id",
        st->match_id ? st->match_id : "", "estimated_wait_ms", (int)st->estimated_wait_ms);
    if (j && st->limits)
        json_object_set_new(j, "limits",
                            json_pack("{s:f, s:i, s:b}", "skill_gap", st->limits->skill_gap,
                                      "ping_ms", (int)st->limits->ping_ms, "skill_ignored",
                                      st->limits->skill_ignored));
    if (j && st->assignment)
        json_object_set_new(j, "assignment", assignment_json(st->assignment));
    return j;
}

static void limits_text(const Gamefn__V1__TicketStatus *st, char *buf, size_t size)
{
    buf[0] = 0;
    if (!st->limits)
        return;
    if (st->limits->skill_ignored)
        snprintf(buf, size, "skill ignored, ping %u ms", st->limits->ping_ms);
    else
        snprintf(buf, size, "skill gap %.1f, ping %u ms", st->limits->skill_gap,
                 st->limits->ping_ms);
}

void gf_cli_status_print(const Gamefn__V1__TicketStatus *st, bool json, bool line)
{
    if (json) {
        gf_cli_json_print(gf_cli_status_json(st), line);
        return;
    }
    char t1[40], t2[40], lim[96];
    limits_text(st, lim, sizeof lim);
    if (line) {
        printf("%s  %-9s %-20s rev %-8llu %s%s%s%s\n",
               gf_cli_time(st->updated_unix_ms, t1, sizeof t1), gf_cli_state_name(st->state),
               gf_cli_reason_name(st->reason), (unsigned long long)st->revision, lim,
               st->match_id && st->match_id[0] ? "  match " : "", st->match_id ? st->match_id : "",
               st->assignment ? "  (assigned: see ticket get)" : "");
        fflush(stdout);
        return;
    }
    printf("ticket    %s\n", st->ticket_id ? st->ticket_id : "");
    printf("state     %s (%s)\n", gf_cli_state_name(st->state), gf_cli_reason_name(st->reason));
    if (st->detail && st->detail[0])
        printf("detail    %s\n", st->detail);
    printf("queue     %s\n", st->queue ? st->queue : "");
    printf("revision  %llu\n", (unsigned long long)st->revision);
    printf("queued    %s\n", gf_cli_time(st->queued_unix_ms, t1, sizeof t1));
    printf("updated   %s\n", gf_cli_time(st->updated_unix_ms, t1, sizeof t1));
    printf("expires   %s\n", gf_cli_time(st->expires_unix_ms, t2, sizeof t2));
    if (lim[0] && st->estimated_wait_ms)
        printf("limits    %s; estimated wait %.1f s\n", lim, st->estimated_wait_ms / 1000.0);
    else if (lim[0])
        printf("limits    %s; no wait estimate yet\n", lim);
    if (st->match_id && st->match_id[0])
        printf("match     %s\n", st->match_id);
    const Gamefn__V1__Assignment *a = st->assignment;
    if (a)
        printf("server    %s in %s at %s:%u, team %u, %zu join token(s) until %s\n",
               a->server_id ? a->server_id : "", a->datacenter ? a->datacenter : "",
               a->address ? a->address : "", a->port, a->team, a->n_tokens,
               gf_cli_time(a->expires_unix_ms, t2, sizeof t2));
}

void gf_cli_created_print(const Gamefn__V1__CreateTicketReply *r, const char *key, bool json)
{
    if (json) {
        json_t *j = json_pack("{s:s, s:s, s:b}", "ticket_id", r->ticket_id ? r->ticket_id : "",
                              "idempotency_key", key, "replayed", r->replayed);
        if (j && r->status)
            json_object_set_new(j, "status", gf_cli_status_json(r->status));
        gf_cli_json_print(j, false);
        return;
    }
    printf("%s%s (idempotency key %s)\n", r->ticket_id ? r->ticket_id : "",
           r->replayed ? "  replayed: an existing ticket" : "", key);
    if (r->status)
        gf_cli_status_print(r->status, false, false);
}
