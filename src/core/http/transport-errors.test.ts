import assert from "node:assert/strict";
import { test } from "node:test";
import { isWellFormedPath, parserErrorAnswer, type ParserError } from "./transport-errors.js";

const parserError = (code: string, packet?: string, bytesParsed?: number): ParserError =>
  Object.assign(new Error(code), { code, rawPacket: packet === undefined ? undefined : Buffer.from(packet, "latin1"), bytesParsed });

test("a head over the limit is a 414 when the request line overflowed, else a 431", () => {
  const longUrl = `GET /${"a".repeat(100)}`;
  assert.equal(parserErrorAnswer(parserError("HPE_HEADER_OVERFLOW", longUrl, longUrl.length)).status, 414);
  // Pipelined behind a complete request: the line that overflowed is the second request line.
  const pipelined = `GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST /${"a".repeat(100)}`;
  assert.equal(parserErrorAnswer(parserError("HPE_HEADER_OVERFLOW", pipelined, pipelined.length)).status, 414);
  const longHeader = `GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ${"p".repeat(100)}`;
  assert.equal(parserErrorAnswer(parserError("HPE_HEADER_OVERFLOW", longHeader, longHeader.length)).status, 431);
  // A header value that looks like a method and a space, continued from an earlier chunk, is not a request line.
  assert.equal(parserErrorAnswer(parserError("HPE_HEADER_OVERFLOW", `GET value of a header`, 21)).status, 431);
  // A URL longer than one chunk: its start is not in the chunk, so the head as a whole is what is reported.
  assert.equal(parserErrorAnswer(parserError("HPE_HEADER_OVERFLOW", "a".repeat(100), 100)).status, 431);
  assert.equal(parserErrorAnswer(parserError("HPE_HEADER_OVERFLOW")).status, 431);
});

test("other parser errors are 400, and a head that did not arrive in time is a 408", () => {
  for (const code of ["HPE_INVALID_METHOD", "HPE_INVALID_HEADER_TOKEN", "HPE_INVALID_CHUNK_SIZE", "HPE_UNEXPECTED_CONTENT_LENGTH", "HPE_INVALID_URL"]) {
    const a = parserErrorAnswer(parserError(code));
    assert.equal(a.status, 400, code);
    assert.equal(a.errors[0].code, 10001);
  }
  const timeout = parserErrorAnswer(parserError("ERR_HTTP_REQUEST_TIMEOUT"));
  assert.deepEqual([timeout.status, timeout.errors[0].code], [408, 10408]);
});

test("a path is well-formed when its escapes are complete and decode to UTF-8", () => {
  for (const good of ["/a/b", "/%20x", "/%E2%9C%93", "/a%2Fb", "/caf%C3%A9"]) assert.equal(isWellFormedPath(good), true, good);
  for (const bad of ["/%", "/%zz", "/%ff%fe", "/%E0%A4%A", "/%C3", "/%ED%A0%80"]) assert.equal(isWellFormedPath(bad), false, bad);
});
