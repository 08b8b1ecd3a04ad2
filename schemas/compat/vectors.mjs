// Cross-language vectors for tests/unit/test_schemas.c, made with protobufjs and
// Node's own Ed25519, independently of protobuf-c and libsodium.
//
// Not part of the build or the test suite (the C tests never need Node). Run by hand:
//   cd /tmp/gamefn-node && npm install protobufjs@8.8.1
//   NODE_PATH=/tmp/gamefn-node/node_modules node schemas/compat/vectors.mjs
// and compare the printed hex with the golden_* constants in the C test.
import { createRequire } from "node:module";
import crypto from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const protobuf = require("protobufjs");

const here = path.dirname(fileURLToPath(import.meta.url));
const protoRoot = path.resolve(here, "..");
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => path.join(protoRoot, target);
root.loadSync(
  ["common", "error", "match", "ticket", "fleet", "event", "leaderboard", "dlq"].map(
    (f) => `gamefn/v1/${f}.proto`,
  ),
);
root.resolveAll();

const T = (name) => root.lookupType(`gamefn.v1.${name}`);
const enc = (name, obj) => {
  const type = T(name);
  const msg = type.fromObject(obj);
  const err = type.verify(msg);
  if (err) throw new Error(`${name}: ${err}`);
  return Buffer.from(type.encode(msg).finish());
};
const out = (name, buf) => console.log(`${name} ${buf.toString("hex")}`);

// Only non-default values: proto3 writers omit defaults, so protobuf-c and
// protobufjs then produce the same bytes.
out(
  "create_ticket_request",
  enc("CreateTicketRequest", {
    idempotencyKey: "7f1c0a52-3f0e-4b8e-9a51-0c6f5d2e8b11",
    queue: "ranked_5v5",
    members: [
      { playerId: "p-alice", rating: 1520.5, sigma: 85.25 },
      { playerId: "p-bob", rating: -3 },
    ],
    pings: [
      { datacenter: "eu-west", pingMs: 32 },
      { datacenter: "eu-central", pingMs: 4100 },
    ],
    attributes: { platform: "pc" },
    region: "eu",
  }),
);

out(
  "error",
  enc("Error", {
    code: "ERROR_CODE_INVALID_ARGUMENT",
    message: "members[1].rating: not finite",
    field: "members[1].rating",
    retryAfterMs: 250,
  }),
);

out(
  "game_event",
  enc("GameEvent", {
    eventId: "gs-7-18446744073709551615",
    sourceId: "gs-7",
    sourceSeq: "18446744073709551615", // 2^64 - 1: the widest varint
    playerId: "p-alice",
    eventType: "kill",
    occurredUnixMs: 1767225600123,
    matchId: "m-42",
    kill: { victimPlayerId: "p-bob", weapon: "railgun", headshot: true, distanceM: 37.5 },
  }),
);

out(
  "leaderboard_query",
  enc("LeaderboardQueryRequest", {
    board: "global",
    around: { playerId: "p-bob", before: 2, after: 50 },
  }),
);

// Join token: a fixed seed, claims from protobufjs, signature from Node's Ed25519.
const seed = Buffer.from(Array.from({ length: 32 }, (_, i) => i + 1));
const pkcs8 = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]);
const sk = crypto.createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" });
const pk = Buffer.from(crypto.createPublicKey(sk).export({ format: "jwk" }).x, "base64url");
const claims = enc("JoinTokenClaims", {
  version: 1,
  keyId: "k2026",
  matchId: "m-42",
  ticketId: "t-9",
  playerId: "p-alice",
  serverId: "gs-7",
  datacenter: "eu-west",
  address: "203.0.113.7",
  port: 7777,
  team: 1,
  issuedUnixMs: 1767225600000,
  expiresUnixMs: 1767225660000,
  nonce: Buffer.from("00112233445566778899aabbccddeeff", "hex"),
});
const signed = Buffer.concat([Buffer.from("gamefn.v1.join-token", "ascii"), claims]);
const sig = crypto.sign(null, signed, sk);
out("join_seed", seed);
out("join_public_key", pk);
out("join_claims", claims);
out("join_token", Buffer.concat([claims, sig]));
