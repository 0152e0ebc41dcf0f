import assert from "node:assert/strict";
import { test } from "node:test";
import { originRequestHeaders } from "./headers.js";

const facts = { host: "www.a.example", clientIp: "198.51.100.7", scheme: "https" as const, ray: "0123456789abcdef-EDGE", loopToken: "edge-platform" };

test("originRequestHeaders: repeated X-Forwarded-For and CDN-Loop are joined with ours appended; the client's own CF-* and Host replaced", () => {
  const raw = [
    "Host",
    "www.a.example",
    "X-Forwarded-For",
    "203.0.113.1",
    "Accept",
    "*/*",
    "x-forwarded-for",
    "203.0.113.2",
    "CDN-Loop",
    "other-cdn",
    "CF-Connecting-IP",
    "10.0.0.1",
    "Upgrade",
    "websocket",
    "Connection",
    "Upgrade",
  ];
  assert.deepEqual(originRequestHeaders(raw, facts), [
    "Accept",
    "*/*",
    "host",
    "www.a.example",
    "cf-connecting-ip",
    "198.51.100.7",
    "x-forwarded-for",
    "203.0.113.1, 203.0.113.2, 198.51.100.7",
    "x-forwarded-proto",
    "https",
    "cf-visitor",
    '{"scheme":"https"}',
    "cf-ray",
    "0123456789abcdef-EDGE",
    "cdn-loop",
    "other-cdn, edge-platform",
  ]);
  // A WebSocket handshake passed through keeps Upgrade and Connection, right after Host.
  assert.deepEqual(originRequestHeaders(raw, { ...facts, upgrade: true }).slice(0, 8), [
    "Accept",
    "*/*",
    "host",
    "www.a.example",
    "Upgrade",
    "websocket",
    "Connection",
    "Upgrade",
  ]);
  // Neither header in the request: the client's address and our token alone.
  const plain = originRequestHeaders(["Host", "www.a.example"], { ...facts, scheme: "http" });
  assert.deepEqual(plain, [
    "host",
    "www.a.example",
    "cf-connecting-ip",
    "198.51.100.7",
    "x-forwarded-for",
    "198.51.100.7",
    "x-forwarded-proto",
    "http",
    "cf-visitor",
    '{"scheme":"http"}',
    "cf-ray",
    "0123456789abcdef-EDGE",
    "cdn-loop",
    "edge-platform",
  ]);
});
