/*
 * gamefn/subjects.h — the subjects, queue groups and header names of the wire
 * protocol (docs/PROTOCOL.md §2 and §4; keep them in step).
 *
 * Constants only: no code, no dependencies.
 */
#ifndef GAMEFN_SUBJECTS_H
#define GAMEFN_SUBJECTS_H

#define GF_WIRE_SUBJ_TICKET_CREATE      "gamefn.v1.ticket.create"
#define GF_WIRE_SUBJ_TICKET_CANCEL      "gamefn.v1.ticket.cancel"
#define GF_WIRE_SUBJ_TICKET_GET         "gamefn.v1.ticket.get"
#define GF_WIRE_SUBJ_TICKET_STATUS      "gamefn.v1.ticket.status" /* .<ticket_id> */
#define GF_WIRE_SUBJ_MATCHMAKING_QUEUES "gamefn.v1.matchmaking.queues"
#define GF_WIRE_SUBJ_FLEET_REGISTER     "gamefn.v1.fleet.register"
#define GF_WIRE_SUBJ_FLEET_HEARTBEAT    "gamefn.v1.fleet.heartbeat"
#define GF_WIRE_SUBJ_FLEET_DEREGISTER   "gamefn.v1.fleet.deregister"
#define GF_WIRE_SUBJ_FLEET_KEYS         "gamefn.v1.fleet.keys"
#define GF_WIRE_SUBJ_FLEET_SCALE        "gamefn.v1.fleet.scale"  /* .<datacenter> */
#define GF_WIRE_SUBJ_FLEET_DEMAND       "gamefn.v1.fleet.demand" /* .<datacenter> */
#define GF_WIRE_SUBJ_TICK_FLEET         "gamefn.v1.tick.fleet"
#define GF_WIRE_SUBJ_LEADERBOARD_QUERY  "gamefn.v1.leaderboard.query"
#define GF_WIRE_SUBJ_ECHO               "gamefn.v1.echo"
#define GF_WIRE_SUBJ_TICK_MATCHER       "gamefn.v1.tick.matcher" /* .<tick_group> */
#define GF_WIRE_SUBJ_MATCH_FOUND        "gamefn.v1.match.found"  /* .<queue> */
#define GF_WIRE_SUBJ_EVENT              "gamefn.v1.event"        /* .<player_id>.<event_type> */
#define GF_WIRE_SUBJ_EVENT_PARTITIONED  "gamefn.v1.evp" /* .<partition>.<player_id>.<type> */
#define GF_WIRE_SUBJ_DLQ                "gamefn.v1.dlq" /* .<stream>.<consumer> */

#define GF_WIRE_QUEUE_INTAKE      "intake"
#define GF_WIRE_QUEUE_FLEET       "fleet"
#define GF_WIRE_QUEUE_LEADERBOARD "leaderboard"
#define GF_WIRE_QUEUE_ECHO        "echo"
#define GF_WIRE_QUEUE_MATCHER     "matcher"

#define GF_WIRE_HDR_ERROR_CODE "Nats-Service-Error-Code"
#define GF_WIRE_HDR_ERROR      "Nats-Service-Error"
#define GF_WIRE_HDR_MSG_ID     "Nats-Msg-Id"
/* Every GameEvent (PROTOCOL.md §4, §9): its source_id and source_seq (decimal), so a
 * headers-only reader can follow each source's sequence. */
#define GF_WIRE_HDR_SOURCE     "Gamefn-Source"
#define GF_WIRE_HDR_SOURCE_SEQ "Gamefn-Source-Seq"

#endif
