import { randomFillSync } from "node:crypto";
import { encodeTime } from "ulid";

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const pool = Buffer.alloc(4096);
let at = pool.length;
/** The millisecond of the last id, its time part, the random first half of its random part, and its counter. */
let lastTime = -1;
let timePart = "";
let randomHead = "";
let counter = 0;

function randomChars(n: number): string {
  if (at + n > pool.length) {
    randomFillSync(pool);
    at = 0;
  }
  let r = "";
  for (let i = 0; i < n; i++) r += CROCKFORD[pool[at++] & 31];
  return r;
}

/** `n` (below 32^8 = 2^40) as 8 Crockford base-32 digits. */
function eightDigits(n: number): string {
  let r = "";
  for (let i = 0; i < 8; i++) {
    r = CROCKFORD[n % 32] + r;
    n = Math.floor(n / 32);
  }
  return r;
}

/**
 * Monotonic ULIDs for log ids: 10 characters of time, then 16 of randomness. The random part of the first id in a
 * millisecond is 8 random characters and a counter starting at a random value below 2^39; later ids of the same
 * millisecond (or of an earlier one, should the clock step back) add one to the counter, which cannot run out in a
 * millisecond. So ids sort in the order they were made, as ULID's monotonic mode promises, without the string
 * arithmetic of the ulid package's increment (a measurable part of the request path under load) or a call for
 * randomness per character.
 */
export function newLogId(now = Date.now()): string {
  if (now > lastTime) {
    lastTime = now;
    timePart = encodeTime(now, 10);
    randomHead = randomChars(8);
    const r = randomChars(8);
    counter = 0;
    // 39 random bits: the first character's top bit stays clear.
    for (let i = 0; i < 8; i++) counter = counter * 32 + (CROCKFORD.indexOf(r[i]) & (i === 0 ? 15 : 31));
  } else counter++;
  return timePart + randomHead + eightDigits(counter);
}
