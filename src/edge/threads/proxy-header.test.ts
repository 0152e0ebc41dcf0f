import assert from "node:assert/strict";
import { test } from "node:test";
import { parseProxyLine, PROXY_LINE_MAX, proxyLine, type ConnectionAddresses } from "./proxy-header.js";

/** What the main thread reads of a line the thread wrote: its text without the CRLF. */
const roundTrip = (a: ConnectionAddresses) => {
  const line = proxyLine(a);
  assert.ok(line.endsWith("\r\n"), "the line ends with CRLF");
  assert.equal(line.indexOf("\r\n"), line.length - 2, "one line");
  assert.ok(line.length <= PROXY_LINE_MAX, `${line.length} bytes`);
  return { line, parsed: parseProxyLine(line.slice(0, -2)) };
};

test("a PROXY line round trips: IPv4", () => {
  const a = { remoteAddress: "203.0.113.7", remotePort: 51234, localAddress: "192.0.2.10", localPort: 80 };
  const { line, parsed } = roundTrip(a);
  assert.equal(line, "PROXY TCP4 203.0.113.7 192.0.2.10 51234 80\r\n");
  assert.deepEqual(parsed, a);
  // The ports' bounds.
  const bounds = { remoteAddress: "127.0.0.1", remotePort: 0, localAddress: "127.0.0.1", localPort: 65535 };
  assert.deepEqual(roundTrip(bounds).parsed, bounds);
});

test("a PROXY line round trips: IPv6, IPv4-mapped IPv6 included, and the longest addresses fit the protocol's line", () => {
  const a = { remoteAddress: "2001:db8::7", remotePort: 443, localAddress: "::1", localPort: 8787 };
  const { line, parsed } = roundTrip(a);
  assert.equal(line, "PROXY TCP6 2001:db8::7 ::1 443 8787\r\n");
  assert.deepEqual(parsed, a);
  // A dual-stack listener reports IPv4 clients this way: they stay IPv6 (TCP6), as Node reported them.
  const mapped = { remoteAddress: "::ffff:203.0.113.7", remotePort: 1, localAddress: "::ffff:127.0.0.1", localPort: 2 };
  assert.match(roundTrip(mapped).line, /^PROXY TCP6 /);
  assert.deepEqual(roundTrip(mapped).parsed, mapped);
  const longest = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
  const full = { remoteAddress: longest, remotePort: 65535, localAddress: longest, localPort: 65535 };
  assert.deepEqual(roundTrip(full).parsed, full);
});

test("a line that is not exactly what proxyLine writes is refused", () => {
  const refused = [
    "",
    "PROXY",
    // Word count.
    "PROXY TCP4 1.2.3.4 5.6.7.8 1",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3",
    "PROXY UNKNOWN",
    // Families this side never writes, or written otherwise.
    "PROXY UNKNOWN 1.2.3.4 5.6.7.8 1 2",
    "PROXY TCP 1.2.3.4 5.6.7.8 1 2",
    "PROXY tcp4 1.2.3.4 5.6.7.8 1 2",
    "PROXY UDP4 1.2.3.4 5.6.7.8 1 2",
    "proxy TCP4 1.2.3.4 5.6.7.8 1 2",
    "PROXY2 TCP4 1.2.3.4 5.6.7.8 1 2",
    // A family that does not match the addresses.
    "PROXY TCP6 1.2.3.4 5.6.7.8 1 2",
    "PROXY TCP4 2001:db8::1 2001:db8::2 1 2",
    "PROXY TCP4 ::ffff:1.2.3.4 ::ffff:5.6.7.8 1 2",
    "PROXY TCP4 1.2.3.4 ::1 1 2",
    "PROXY TCP4 ::1 1.2.3.4 1 2",
    "PROXY TCP6 ::1 1.2.3.4 1 2",
    "PROXY TCP6 1.2.3.4 ::1 1 2",
    "PROXY TCP4 ::ffff:1.2.3.4 5.6.7.8 1 2",
    "PROXY TCP6 ::ffff:1.2.3.4 1.2.3.4 1 2",
    // Ports out of range, with leading zeros, signs or other notations.
    "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1 65536",
    "PROXY TCP4 1.2.3.4 5.6.7.8 99999 2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 123456 2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 01 2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1 00",
    "PROXY TCP4 1.2.3.4 5.6.7.8 080 2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 +1 2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 -1 2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1 -0",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1.0 2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 0x10 2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1e3 2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1 2a",
    "PROXY TCP4 1.2.3.4 5.6.7.8 １ 2",
    // Spaces: doubled, leading, trailing, tabs; a CR left on the line.
    "PROXY  TCP4 1.2.3.4 5.6.7.8 1 2",
    "PROXY TCP4  1.2.3.4 5.6.7.8 1 2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1  2",
    " PROXY TCP4 1.2.3.4 5.6.7.8 1 2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 ",
    "PROXY\tTCP4\t1.2.3.4\t5.6.7.8\t1\t2",
    "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r",
    // Not IP addresses.
    "PROXY TCP4 localhost 5.6.7.8 1 2",
    "PROXY TCP4 1.2.3.4 example.com 1 2",
    "PROXY TCP4 1.2.3 5.6.7.8 1 2",
    "PROXY TCP4 1.2.3.04 5.6.7.8 1 2",
    "PROXY TCP4 256.2.3.4 5.6.7.8 1 2",
    "PROXY TCP4 1.2.3.4/32 5.6.7.8 1 2",
    "PROXY TCP6 [::1] ::1 1 2",
    "PROXY TCP6 ::1 [::1] 1 2",
    "PROXY TCP6 ::g ::1 1 2",
  ];
  for (const line of refused) assert.equal(parseProxyLine(line), undefined, JSON.stringify(line));
  // The same words in the right form are read (the refusals above are not refusing everything).
  assert.deepEqual(parseProxyLine("PROXY TCP4 1.2.3.4 5.6.7.8 1 2"), { remoteAddress: "1.2.3.4", remotePort: 1, localAddress: "5.6.7.8", localPort: 2 });
  assert.deepEqual(parseProxyLine("PROXY TCP6 ::1 ::1 0 65535"), { remoteAddress: "::1", remotePort: 0, localAddress: "::1", localPort: 65535 });
});
