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
