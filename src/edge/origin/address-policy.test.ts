import assert from "node:assert/strict";
import { BlockList } from "node:net";
import { test } from "node:test";
import { OriginAddressPolicy } from "./address-policy.js";

/** A policy allowing 127.0.0.0/8, with 45.1.2.0/24 as the platform's own; counts how often the latter is asked. */
function policy() {
  const allow = new BlockList();
  allow.addSubnet("127.0.0.0", 8, "ipv4");
  const own = new BlockList();
  own.addSubnet("45.1.2.0", 24, "ipv4");
  const asked: string[] = [];
  const p = new OriginAddressPolicy(allow, (ip) => {
    asked.push(ip);
    return own.check(ip, "ipv4");
  });
  return { p, asked };
}

test("OriginAddressPolicy: the same verdicts asked once or many times (allowed, private, the platform's own, not an address)", () => {
  const { p } = policy();
  for (let round = 0; round < 3; round++) {
    assert.equal(p.allowed("127.0.0.5"), true, "allowed by --origin-allow");
    assert.equal(p.allowed("93.184.216.34"), true, "public");
    assert.equal(p.allowed("10.0.0.1"), false, "private");
    assert.equal(p.allowed("45.1.2.10"), false, "the platform's own");
    assert.equal(p.allowed("::1"), false, "loopback IPv6, not allowed");
    assert.equal(p.allowed("not-an-address"), false);
    assert.equal(p.publicOnly("127.0.0.5"), false, "publicOnly ignores --origin-allow");
  }
});

test("OriginAddressPolicy: a verdict is decided once per address (the hot path asks per request), within a bound", () => {
  const { p, asked } = policy();
  for (let i = 0; i < 100; i++) assert.equal(p.allowed("93.184.216.34"), true);
  assert.deepEqual(asked, ["93.184.216.34"]);
  // Many distinct addresses (a tenant's records): what is remembered stays bounded, the verdicts stay right.
  for (let i = 0; i < 5000; i++) assert.equal(p.allowed(`93.${(i >> 8) & 255}.1.${i & 255}`), true);
  for (let i = 0; i < 5000; i++) assert.equal(p.allowed(`45.1.2.${i & 255}`), false);
  assert.ok((p as unknown as { verdicts: Map<string, boolean> }).verdicts.size <= 4096);
});
