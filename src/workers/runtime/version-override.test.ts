import assert from "node:assert/strict";
import { test } from "node:test";
import { versionOverride } from "./version-override.js";

const ID = "dc8dcd28-271b-4367-9840-6c244f84cb40";
const of = (value: string | string[], name = "my-worker") => versionOverride({ "cloudflare-workers-version-overrides": value }, name);

test("Cloudflare-Workers-Version-Overrides: the String a Dictionary entry of the Worker's name holds, as RFC 8941 parses it", () => {
  assert.equal(of(`my-worker="${ID}"`), ID);
  assert.equal(of(`other="x", my-worker="${ID}";note=1`), ID, "among others, with parameters");
  assert.equal(of(`other="x"`), undefined, "no entry for this Worker");
  assert.equal(of(['other="x"', `my-worker="${ID}"`]), ID, "repeated fields continue the Dictionary");
  assert.equal(of(`my-worker="a\\"b"`), 'a"b', "escapes inside a String");
  assert.equal(of(`my-worker=${"abc"}`), undefined, "a Token is not a String");
  assert.equal(of(`my-worker=("${ID}")`), undefined, "nor an inner list");
  assert.equal(of(`my-worker="${ID}`), undefined, "an unterminated String: the header does not parse");
  assert.equal(of(`My-Worker="${ID}"`, "My-Worker"), undefined, "keys are lowercase");
  assert.equal(versionOverride({}, "my-worker"), undefined);
  assert.equal(versionOverride(undefined, "my-worker"), undefined);
  // The same header again (the parse is kept), then another one: each answers for its own value.
  assert.equal(of(`my-worker="${ID}"`), ID);
  assert.equal(of(`my-worker="${ID}"`, "other"), undefined);
  assert.equal(of(`other="y"`, "other"), "y");
});

test("Cloudflare-Workers-Version-Overrides: a header over 2 KiB is not parsed (ignored, as one that does not parse)", () => {
  // Its parse is a few hundred nanoseconds a character (an inner list of 16,000 items, 32 KiB: 25-50 ms of the
  // event loop here), and any client may send one to a Worker in a gradual deployment.
  const padded = (chars: number) => `pad=(${"a ".repeat(Math.max(0, (chars - ID.length - 20) >> 1))}), my-worker="${ID}"`;
  assert.ok(padded(2000).length <= 2048);
  assert.equal(of(padded(2000)), ID, "a header within the bound is read");
  assert.ok(padded(32_000).length > 2048);
  assert.equal(of(padded(32_000)), undefined, "a 32 KiB header is ignored");
  assert.equal(of([padded(1500), padded(1500)]), undefined, "repeated fields count together");
});
