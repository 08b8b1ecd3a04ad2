/*
 * join_vectors.h — the join-token test vector of docs/PROTOCOL.md, produced
 * independently by Node's Ed25519 (schemas/compat/vectors.mjs): a key pair from a
 * fixed seed, serialized JoinTokenClaims {version 1, key_id "k2026", match "m-42",
 * ticket "t-9", player "p-alice", server "gs-7", port 7777, expires 1767225660000,
 * ...} and the signature of GF_WIRE_JOIN_CONTEXT || claims.
 */
#ifndef GAMEFN_TEST_JOIN_VECTORS_H
#define GAMEFN_TEST_JOIN_VECTORS_H

static const char golden_seed[] =
    "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20";
static const char golden_pk[] = "79b5562e8fe654f94078b112e8a98ba7901f853ae695bed7e0e3910bad049664";
static const char golden_claims[] =
    "080112056b323032361a046d2d34322203742d392a07702d616c696365320467732d373a0765752d7765737442"
    "0b3230332e302e3131332e3748e13c50015880d0eab6b73360e0a4eeb6b7336a1000112233445566778899aabb"
    "ccddeeff";
static const char golden_sig[] =
    "2a87fcd33fcad45f58d952b39fc7840d0d3ee9510edb4740791287faaad5762bcff1cdb7084f4ac8687fe40ecf"
    "42ba9877b9d6913eaa3adcd71dc9d760fdb209";

#endif
