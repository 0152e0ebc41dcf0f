import assert from "node:assert/strict";
import { test } from "node:test";
import { isPublicAddress } from "./public-address.js";

test("public unicast addresses pass; loopback, private, link-local, CGNAT, multicast, reserved and mapped ones do not", () => {
  for (const ip of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "2001:4860:4860::8888"]) assert.equal(isPublicAddress(ip), true, ip);
  for (const ip of [
    "127.0.0.1",
    "127.8.9.10",
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "192.0.2.1",
    "::1",
    "::",
    "fe80::1",
    "fd00::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:10.1.2.3",
    // IPv4-compatible IPv6 (::/96), which ipaddr.js calls unicast: ::7f00:1 carries 127.0.0.1, ::a00:1 10.0.0.1
    "::7f00:1",
    "::a00:1",
    "::808:808",
    "2001:db8::1",
    "not an address",
    "",
  ])
    assert.equal(isPublicAddress(ip), false, ip);
});
