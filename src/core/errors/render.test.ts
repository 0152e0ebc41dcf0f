import { test } from "node:test";
import assert from "node:assert/strict";
import { EdgeError } from "../errors.js";
import { toBindingReply, toCliMessage, toEnvelope } from "./render.js";

test("toEnvelope: the v4 failure envelope, with a refusal's chain, pointer and extra fields", () => {
  const err = new EdgeError(400, 1004, "ttl: too small", { pointer: "/ttl", chain: [{ code: 9, message: "why" }], extra: { error: [{ code: 1 }] } });
  assert.deepEqual(toEnvelope(err), {
    success: false,
    errors: [{ code: 1004, message: "ttl: too small", error_chain: [{ code: 9, message: "why" }], source: { pointer: "/ttl" } }],
    messages: [],
    result: null,
    error: [{ code: 1 }],
  });
});

test("toBindingReply kv: the status, the message as a printable reason phrase, {success, errors} as text", () => {
  const reply = toBindingReply(new EdgeError(413, 10029, "value is too large: “25 MiB”\nmax"), "kv");
  assert.equal(reply.status, 413);
  assert.equal(reply.reason, "value is too large: ?25 MiB??max");
  assert.deepEqual(reply.headers, { "content-type": "text/plain; charset=utf-8" });
  assert.deepEqual(JSON.parse(reply.body.toString()), { success: false, errors: [{ code: 10029, message: "value is too large: “25 MiB”\nmax" }] });
  const bug = toBindingReply(new Error("boom"), "kv");
  assert.deepEqual([bug.status, bug.reason, bug.body.toString()], [500, "Internal Server Error", "internal error"]);
});

test("toBindingReply r2: cf-r2-error (ASCII-safe) and the same JSON as the body; a bug is the area's internal refusal", () => {
  const reply = toBindingReply(new EdgeError(404, 10007, "The specified key does not exist: é"), "r2");
  assert.equal(reply.status, 404);
  assert.equal(reply.headers["cf-r2-error"], '{"version":1,"v4code":10007,"message":"The specified key does not exist: \\u00e9"}');
  assert.equal(reply.headers["content-type"], "application/json");
  assert.deepEqual(JSON.parse(reply.body.toString()), { version: 1, v4code: 10007, message: "The specified key does not exist: é" });
  const bug = toBindingReply(new Error("boom"), "r2", () => new EdgeError(500, 10001, "We encountered an internal error. Please try again."));
  assert.equal(bug.status, 500);
  assert.deepEqual(JSON.parse(bug.body.toString()), { version: 1, v4code: 10001, message: "We encountered an internal error. Please try again." });
});

test("toCliMessage: each error with its code, one per line", () => {
  assert.equal(toCliMessage(new EdgeError(404, 10009, "key not found")), "key not found [code: 10009]");
  assert.equal(
    toCliMessage(
      EdgeError.many(404, [
        { code: 7003, message: "a" },
        { code: 7000, message: "b" },
      ]),
    ),
    "a [code: 7003]\nb [code: 7000]",
  );
});

test("toCliMessage: the error chain follows its error, so the server's reason is shown", () => {
  assert.equal(
    toCliMessage(new EdgeError(400, 6003, "Invalid request headers", { chain: [{ code: 6111, message: "Invalid format for Authorization header" }] })),
    "Invalid request headers [code: 6003]\n  Invalid format for Authorization header [code: 6111]",
  );
});
