import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { EdgeError } from "../../core/errors.js";
import { parseSvcParams, ipv6Bytes } from "./svcb.js";
import { parseTxt, txtWireStrings, unquotedTxt } from "./txt.js";

describe("DNS record values", () => {
  it("parses TXT content and refuses inconsistent quotes", () => {
    assert.deepEqual(parseTxt("plain text"), { strings: ["plain text"], content: '"plain text"' });
    assert.deepEqual(parseTxt('"a b" "c\\"d"').strings, ["a b", 'c"d']);
    for (const bad of ['"open', 'close"', '"a"b', 'x "a"', '"a" "b']) assert.throws(() => parseTxt(bad), EdgeError, bad);
    assert.equal(unquotedTxt('"tok" "en"'), "token");
    assert.deepEqual(
      txtWireStrings(["y".repeat(600)]).map((b) => b.length),
      [255, 255, 90],
    );
  });

  it("reads SvcParams and refuses bad ones", () => {
    const p = parseSvcParams('port=443 alpn="h3,h2" ipv6hint=2001:db8::1 ipv4hint=192.0.2.1,192.0.2.2');
    assert.deepEqual(
      p.map((x) => x.key),
      [1, 3, 4, 6],
      "sorted by key",
    );
    assert.deepEqual([...p[0].value], [2, 0x68, 0x33, 2, 0x68, 0x32]);
    assert.equal(p[2].value.length, 8);
    for (const bad of ["alpn", "port=70000", "ipv4hint=::1", "bogus=1", "port=1 port=2", "ech=", 'alpn="h2'])
      assert.throws(() => parseSvcParams(bad), Error, bad);
    assert.equal(ipv6Bytes("2001:db8::1").toString("hex"), "20010db8000000000000000000000001");
    assert.equal(ipv6Bytes("::ffff:192.0.2.1").toString("hex"), "00000000000000000000ffffc0000201");
  });
});
