import { test } from "node:test";
import assert from "node:assert/strict";
import { EdgeError } from "../errors.js";
import { markDependency } from "./dependency.js";
import { asciiJson, statusText, textReply, toBindingReply, toCliMessage, toEnvelope, type BindingErrorFormat } from "./render.js";

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

test("toBindingReply: a refusal in the area's format, a bug as its bug reply, an unreachable dependency as a refusal", () => {
  const format: BindingErrorFormat = {
    refusal: (err) => textReply(err.status, `${err.errors[0]?.code}: ${err.message}`, statusText(err.message, 10)),
    bug: () => textReply(500, "bug"),
  };
  const reply = toBindingReply(new EdgeError(404, 7, "not there: é, and more"), format);
  assert.deepEqual([reply.status, reply.reason, reply.body.toString()], [404, "not there:", "7: not there: é, and more"]);
  assert.deepEqual(reply.headers, { "content-type": "text/plain; charset=utf-8" });
  const bug = toBindingReply(new Error("boom"), format);
  assert.deepEqual([bug.status, bug.body.toString()], [500, "bug"]);
  const down = toBindingReply(markDependency(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }), "PostgreSQL"), format);
  assert.equal(down.status, 503);
});

test("asciiJson: header-safe JSON", () => {
  assert.equal(asciiJson({ m: "é" }), '{"m":"\\u00e9"}');
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
