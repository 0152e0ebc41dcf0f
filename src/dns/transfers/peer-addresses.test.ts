import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { startTestPlatform } from "../../core/testing/platform.js";
import { startDnsPlatform } from "../testing/helpers.js";

const HANG_GUARD = { timeout: 180_000 };

/**
 * A tenant names the addresses of its transfer peers, and the platform then connects to them (AXFR/IXFR from a
 * secondary zone's primaries, NOTIFY to secondaries). Without a limit, that lets a tenant probe the host's own ports
 * and its private network; so peers must be public unless the operator allows a range (--dns-peer-allow).
 */
test("a transfer peer on a loopback, private, link-local or mapped address is refused unless the operator allows its range", HANG_GUARD, async (t) => {
  const p = await startTestPlatform({ args: ["--dns-port", "0"] });
  t.after(() => p.dispose());
  const peers = `/accounts/${p.accountId}/secondary_dns/peers`;
  for (const ip of ["127.0.0.1", "10.1.2.3", "192.168.0.1", "169.254.169.254", "::1", "::ffff:127.0.0.1", "fd00::5", "0.0.0.0"]) {
    const r = await p.api("POST", peers, { name: `p-${ip}`, ip, port: 22 });
    assert.equal(r.status, 400, ip);
    assert.equal(r.body.errors[0].source?.pointer ?? "/ip", "/ip");
    assert.match(r.body.errors[0].message, /not a public address.*--dns-peer-allow/, ip);
  }
  // Creating a peer connects to nothing; a public address is taken.
  const open = await p.api("POST", peers, { name: "public", ip: "8.8.8.8", port: 53 });
  assert.equal(open.status, 200, JSON.stringify(open.body));
  const moved = await p.api("PUT", `${peers}/${open.body.result.id}`, { name: "public", ip: "127.0.0.1", port: 22 });
  assert.equal(moved.status, 400, "an update is checked too");
  assert.equal((await p.api("GET", `${peers}/${open.body.result.id}`)).body.result.ip, "8.8.8.8", "and changes nothing");
});

test("a primary stored while its range was allowed is not connected to once the operator stops allowing it", HANG_GUARD, async (t) => {
  const stateDir = mkdtempSync(join(tmpdir(), "edge-peer-allow-"));
  t.after(() => rmSync(stateDir, { recursive: true, force: true }));
  const { p: allowed } = await startDnsPlatform([], stateDir);
  const accountId = allowed.accountId;
  const zone = (await allowed.api("POST", "/zones", { name: "narrowed.example", type: "secondary", account: { id: accountId } })).body.result.id as string;
  // Port 9 on loopback: nothing listens, so an allowed attempt fails with a connection error, not with the policy.
  const peer = (await allowed.api("POST", `/accounts/${accountId}/secondary_dns/peers`, { name: "local", ip: "127.0.0.1", port: 9 })).body.result.id as string;
  assert.equal((await allowed.api("POST", `/zones/${zone}/secondary_dns/incoming`, { peers: [peer] })).status, 200);
  const tried = await allowed.api("POST", `/zones/${zone}/secondary_dns/force_axfr`);
  assert.doesNotMatch(JSON.stringify(tried.body.errors), /not a public address/);
  await allowed.stop();

  const { email, apiKey, token } = allowed;
  const narrowed = await startTestPlatform({ args: ["--dns-port", "0"], stateDir, credentials: { accountId, email, apiKey, token } });
  t.after(() => narrowed.dispose());
  // Every primary refused by the policy: the zone's configuration is at fault, not an upstream (so 400, not 502).
  const forced = await narrowed.api("POST", `/zones/${zone}/secondary_dns/force_axfr`);
  assert.equal(forced.status, 400, JSON.stringify(forced.body));
  assert.equal(forced.body.success, false);
  assert.equal(forced.body.errors[0].code, 9606);
  assert.match(forced.body.errors[0].message, /local \(127\.0\.0\.1:9\): not a public address.*--dns-peer-allow/);
});
