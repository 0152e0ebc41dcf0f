import assert from "node:assert/strict";
import { test } from "node:test";
import { passedRequestHeaders, relayableHeaders } from "./relay.js";

test("passedRequestHeaders: hop-by-hop and Connection-listed names dropped, repeats kept in order, the caller's own appended", () => {
  const raw = [
    "Host",
    "a.example",
    "Connection",
    "keep-alive, X-Private",
    "X-Private",
    "1",
    "TE",
    "trailers",
    "Set-Thing",
    "1",
    "set-thing",
    "2",
    "Expect",
    "100-continue",
    "CF-Connecting-IP",
    "203.0.113.9",
  ];
  assert.deepEqual(passedRequestHeaders(raw, new Set(["cf-connecting-ip"]), ["cf-connecting-ip", "198.51.100.1"]), [
    "host",
    "a.example",
    "Set-Thing",
    "1",
    "set-thing",
    "2",
    "cf-connecting-ip",
    "198.51.100.1",
  ]);
});

test("passedRequestHeaders: an HTTP/2 request's :authority is passed on as host, its other pseudo-headers never", () => {
  const raw = [":method", "GET", ":path", "/x", ":scheme", "https", ":authority", "h2.example", "accept", "*/*"];
  assert.deepEqual(passedRequestHeaders(raw, new Set(), []), ["host", "h2.example", "accept", "*/*"]);
  assert.deepEqual(passedRequestHeaders(raw, new Set(["host"]), ["host", "set.example"]), ["accept", "*/*", "host", "set.example"]);
});

test("relayableHeaders: hop-by-hop answer headers and those Connection lists are not relayed; content-length read", () => {
  const raw = ["Content-Length", "5", "Connection", "x-hop", "X-Hop", "1", "Keep-Alive", "timeout=5", "Set-Cookie", "a=1", "Set-Cookie", "b=2"].map((v) =>
    Buffer.from(v),
  );
  assert.deepEqual(relayableHeaders(raw), { list: ["content-length", "5", "set-cookie", "a=1", "set-cookie", "b=2"], contentLength: 5 });
});
