import { randomFillSync } from "node:crypto";
import { encodeTime, incrementBase32 } from "ulid";

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const pool = Buffer.alloc(4096);
let at = pool.length;
let lastTime = -1;
let lastRandom = "";

/**
 * Monotonic ULIDs for log ids. The random part comes from a pooled buffer refilled 4 KB at a time,
 * because the ulid package asks the OS for randomness once per character on the request path.
 */
export function newLogId(now = Date.now()): string {
  if (now <= lastTime) {
    lastRandom = incrementBase32(lastRandom);
    return encodeTime(lastTime, 10) + lastRandom;
  }
  if (at + 16 > pool.length) {
    randomFillSync(pool);
    at = 0;
  }
  let r = "";
  for (let i = 0; i < 16; i++) r += CROCKFORD[pool[at++] & 31];
  lastTime = now;
  lastRandom = r;
  return encodeTime(now, 10) + r;
}
