import { test } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { Codes, EdgeError } from "../errors.js";
import { readBody } from "./body.js";

const chunks = (...parts: string[]) => Readable.from(parts.map((p) => Buffer.from(p)));

test("readBody returns the whole body up to the limit", async () => {
  assert.equal((await readBody(chunks("ab", "cd"), 4)).toString(), "abcd");
  assert.equal((await readBody(chunks(), 4)).length, 0);
});

test("past the limit: the caller's refusal, told the limit and the size counted; core's 413 by default", async () => {
  const seen: (number | undefined)[] = [];
  const refusal = (max: number, got?: number) => {
    seen.push(max, got);
    return new EdgeError(413, 12345, "too big for this route");
  };
  await assert.rejects(readBody(chunks("abc", "de"), 4, refusal), (e: EdgeError) => e.status === 413 && e.errors[0].code === 12345);
  assert.deepEqual(seen, [4, 5]);
  await assert.rejects(readBody(chunks("abcde"), 4), (e: EdgeError) => e.status === 413 && e.errors[0].code === Codes.bodyTooLarge);
});

test("a body that stops before its end is refused as incomplete, not left waiting", async () => {
  const cut = new Readable({ read() {} });
  cut.push(Buffer.from("partial"));
  const reading = readBody(cut, 1024);
  setImmediate(() => cut.destroy());
  await assert.rejects(reading, (e: EdgeError) => e.status === 400 && /ended before it was complete/.test(e.message));
});
