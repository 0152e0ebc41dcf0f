import assert from "node:assert/strict";
import { test } from "node:test";
import { peekHost } from "./host-peek.js";

const LIMIT = 1024;
const peek = (head: string, limit = LIMIT) => peekHost(Buffer.from(head, "latin1"), limit);
const get = (...fields: string[]) => `GET / HTTP/1.1\r\n${fields.map((f) => `${f}\r\n`).join("")}\r\n`;

test("a complete head with one Host: its value, whatever the field's case, the request's version and what follows", () => {
  assert.deepEqual(peek(get("Host: tenant.example")), { host: "tenant.example" });
  assert.deepEqual(peek(get("User-Agent: t", "host: tenant.example", "Accept: */*")), { host: "tenant.example" });
  assert.deepEqual(peek(get("HOST: Tenant.Example:8080")), { host: "Tenant.Example:8080" }, "as sent: the dispatch normalizes it");
  assert.deepEqual(peek(get("hOsT:[2001:db8::1]:80")), { host: "[2001:db8::1]:80" }, "no space after the colon");
  assert.deepEqual(peek("GET / HTTP/1.0\r\nHost: tenant.example\r\n\r\n"), { host: "tenant.example" });
  assert.deepEqual(peek("POST /upload?x=1 HTTP/1.1\r\nHost: tenant.example\r\nContent-Length: 4\r\n\r\nbody"), { host: "tenant.example" });
  // Pipelined: only the first request's head counts (the second request's Host is Node's to read).
  assert.deepEqual(peek(`${get("Host: tenant.example")}${get("Host: localhost")}`), { host: "tenant.example" });
});

test("the Host's surrounding spaces and tabs are not its value (as Node strips them); nothing else is stripped", () => {
  assert.deepEqual(peek(get("Host:   tenant.example  ")), { host: "tenant.example" });
  assert.deepEqual(peek(get("Host:\ttenant.example\t")), { host: "tenant.example" });
  // Node keeps a NBSP (0xa0) in the value: the peek must not read a host Node does not.
  assert.equal(peek(get("Host: tenant.example\xa0")), "none");
  assert.equal(peek(get("Host: \xa0tenant.example")), "none");
  assert.equal(peek(get("Host: tenant example")), "none", "whitespace inside");
  assert.equal(peek(get("Host: tenant.example\x0b")), "none", "a control byte");
  assert.equal(peek(get("Host: t\xe9nant.example")), "none", "a byte above ASCII");
});

test("a head not complete yet and under the limit: more; at or past the limit: none", () => {
  assert.equal(peek(""), "more");
  assert.equal(peek("G"), "more");
  assert.equal(peek("GET"), "more");
  assert.equal(peek("GET /"), "more");
  assert.equal(peek("GET / HTTP/1.1\r\nHost: tenant.example\r\n"), "more");
  assert.equal(peek("GET / HTTP/1.1\r\nHost: tenant.example\r\n\r"), "more");
  const partial = `GET /${"a".repeat(100)}`;
  assert.equal(peek(partial, partial.length + 1), "more");
  assert.equal(peek(partial, partial.length), "none");
  // A complete head whose end is past the limit.
  const long = get(`X-Long: ${"a".repeat(200)}`, "Host: tenant.example");
  assert.deepEqual(peek(long, long.length), { host: "tenant.example" });
  assert.equal(peek(long, 100), "none");
});

test("no Host, an empty one or two of them: none (the main thread answers, as without threads)", () => {
  assert.equal(peek(get()), "none");
  assert.equal(peek(get("Accept: */*")), "none");
  assert.equal(peek(get("Host:")), "none");
  assert.equal(peek(get("Host:   ")), "none");
  assert.equal(peek(get("Host: tenant.example", "Host: localhost")), "none");
  assert.equal(peek(get("Host: tenant.example", "host: tenant.example")), "none", "even the same value twice");
  assert.equal(peek("GET / HTTP/1.0\r\n\r\n"), "none", "HTTP/1.0 without Host");
  assert.equal(peek("GET / HTTP/1.0\r\nAccept: */*\r\n\r\n"), "none");
});

test("fields named like Host are not Host", () => {
  assert.equal(peek(get("X-Host: tenant.example")), "none");
  assert.equal(peek(get("Hostname: tenant.example")), "none");
  assert.equal(peek(get("Hosts: tenant.example")), "none");
  assert.equal(peek(get("Ghost: tenant.example")), "none");
  assert.deepEqual(peek(get("X-Host: localhost", "Host: tenant.example", "Hostname: localhost")), { host: "tenant.example" });
  assert.deepEqual(peek(get("X-Forwarded-Host: localhost", "Host: tenant.example")), { host: "tenant.example" });
});

test("what a parser could read otherwise is none: obs-fold, whitespace before the colon, lone CR or LF, no colon", () => {
  // A folded continuation: a lenient parser appends it to the Host; Node refuses it.
  assert.equal(peek(get("Host: tenant.example", " localhost")), "none");
  assert.equal(peek(get("Host: tenant.example", "\tlocalhost")), "none");
  assert.equal(peek(get("X-A: a", " Host: localhost", "Host: tenant.example")), "none");
  // Whitespace before the colon: a lenient parser reads a Host field (a second one here).
  assert.equal(peek(get("Host : localhost", "Host: tenant.example")), "none");
  assert.equal(peek(get("Host\t: localhost", "Host: tenant.example")), "none");
  assert.equal(peek(get("Host: tenant.example", "Host : localhost")), "none");
  // A lone LF or CR: a parser that takes it as a line end sees a Host before this one.
  assert.equal(peek(get("X-A: a\nHost: localhost", "Host: tenant.example")), "none");
  assert.equal(peek(get("X-A: a\rHost: localhost", "Host: tenant.example")), "none");
  assert.equal(peek("GET / HTTP/1.1\nHost: localhost\n\r\nHost: tenant.example\r\n\r\n"), "none");
  // Lines that are not fields at all.
  assert.equal(peek(get("Host: tenant.example", "no colon here")), "none");
  assert.equal(peek(get("Host: tenant.example", ": no name")), "none");
  assert.equal(peek(get("Host: tenant.example", "X(A): a")), "none", "a name that is not a token");
});

test("bytes that are not an HTTP/1.x request: none, without waiting for more", () => {
  // A TLS ClientHello's first bytes (record type 22, TLS 1.0 record version, a length, ClientHello type 1).
  const hello = Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, ...Array(32).fill(0x2a)]);
  assert.equal(peekHost(hello, LIMIT), "none");
  assert.equal(peekHost(hello.subarray(0, 1), LIMIT), "none", "from its first byte");
  // HTTP/2 with prior knowledge (its preface has an empty line of its own), and an HTTP/2 request line.
  assert.equal(peek("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), "none");
  assert.equal(peek("GET / HTTP/2.0\r\nHost: tenant.example\r\n\r\n"), "none");
  assert.equal(peek("GET / HTTP/1.2\r\nHost: tenant.example\r\n\r\n"), "none");
  assert.equal(peek("GET / HTTP/0.9\r\nHost: tenant.example\r\n\r\n"), "none");
  assert.equal(peek("GET /\r\nHost: tenant.example\r\n\r\n"), "none", "no version");
  assert.equal(peek("get / HTTP/1.1\r\nHost: tenant.example\r\n\r\n"), "none", "a lower-case method");
  assert.equal(peek("get / HTTP/1.1\r\nHost: tenant.example\r\n"), "none", "…known before the head ends");
  assert.equal(peek("GET  / HTTP/1.1\r\nHost: tenant.example\r\n\r\n"), "none", "two spaces");
  assert.equal(peek("GET / HTTP/1.1 \r\nHost: tenant.example\r\n\r\n"), "none", "a trailing space");
  assert.equal(peek("\r\nGET / HTTP/1.1\r\nHost: tenant.example\r\n\r\n"), "none", "an empty line first");
  assert.equal(peek("\x00\x01\x02\x03"), "none");
  assert.equal(peek(`${"A".repeat(30)}`), "none", "no method is that long");
  assert.equal(peek("SSH-2.0-OpenSSH_9.6\r\n"), "none");
});
