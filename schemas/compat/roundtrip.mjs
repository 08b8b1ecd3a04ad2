// By-hand check that protobufjs reads what protobuf-c writes, for every message:
// decodes each "<message name> <hex>" line, verifies it, re-encodes it and expects
// the same bytes. Not part of the test suite (the C tests never need Node).
//   build/tests/test_schemas --dump > /tmp/gamefn-vectors.txt
//   NODE_PATH=/tmp/gamefn-node/node_modules node schemas/compat/roundtrip.mjs /tmp/gamefn-vectors.txt
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const protobuf = require("protobufjs");
const protoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => path.join(protoRoot, target);
root.loadSync(
  ["common", "error", "match", "ticket", "fleet", "event", "leaderboard", "dlq", "queue"].map(
    (f) => `gamefn/v1/${f}.proto`,
  ),
);
root.resolveAll();

let same = 0;
let differ = 0;
for (const line of fs.readFileSync(process.argv[2], "utf8").trim().split("\n")) {
  const [name, hex] = line.split(" ");
  const type = root.lookupType(name);
  const bytes = Buffer.from(hex, "hex");
  const msg = type.decode(bytes);
  const err = type.verify(msg);
  const again = Buffer.from(type.encode(msg).finish());
  if (err || !again.equals(bytes)) {
    differ++;
    console.log(`DIFFERS ${name}: ${err ?? again.toString("hex")}`);
  } else {
    same++;
  }
}
console.log(`${same} encodings identical after a protobufjs round trip, ${differ} differ`);
process.exit(differ === 0 ? 0 : 1);
