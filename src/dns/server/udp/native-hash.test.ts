import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { loadNativeUdp } from "./fast-path.js";

const loaded = loadNativeUdp();
const skip = "why" in loaded ? `the native path is not loaded: ${loaded.why}` : false;

// The cached answers are keyed by queries anyone can send, NXDOMAIN answers for made-up names included: if their slots
// in the table could be computed from outside, a sender could pile its names into one run of slots (udp-fast.cc, KeyedHash).
test("the native answer table hashes keys under a key of its own process: the same query hashes differently in another process", { skip }, async () => {
  if ("why" in loaded) return;
  const key = Buffer.from("\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", "latin1");
  const here = loaded.native.keyHash(key);
  assert.equal(loaded.native.keyHash(key), here, "stable within the process");
  const script = `import { loadNativeUdp } from ${JSON.stringify(new URL("./fast-path.js", import.meta.url).href)};
    const r = loadNativeUdp(); process.stdout.write(r.native.keyHash(Buffer.from(${JSON.stringify(key.toString("latin1"))}, "latin1")));`;
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script]);
  assert.match(stdout, /^[0-9a-f]{16}$/);
  assert.notEqual(stdout, here, "another process, another key");
});

test("the answer table's hash spreads similar keys over the slots", { skip }, () => {
  if ("why" in loaded) return;
  const slots = new Map<string, number>();
  for (let i = 0; i < 16_384; i++) {
    const low = loaded.native.keyHash(Buffer.from(`\x00\x00name-${i}.example.com`)).slice(-3); // the low 12 bits
    slots.set(low, (slots.get(low) ?? 0) + 1);
  }
  // 4 keys per slot on average; a hash that ignored part of its input would crowd a few slots.
  assert.ok(slots.size > 3_900, `${slots.size} of 4,096 slots used`);
  assert.ok(Math.max(...slots.values()) <= 20, `at most ${Math.max(...slots.values())} keys in one slot`);
});
