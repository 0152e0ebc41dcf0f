import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { request } from "undici";
import { startTwoNodes } from "../core/testing/two-nodes.js";
import { eventually } from "../core/testing/eventually.js";
import { loopbackBlock, startOrigin, testCertificates } from "./testing/origins.js";
import { execFile } from "node:child_process";
import { tlsPortOf } from "../workers/testing/tls.js";
import { dig } from "../dns/testing/helpers.js";

const HANG_GUARD = { timeout: 300_000 };

test("on two nodes (PostgreSQL), both proxy a name, and a setting changed through one is obeyed by the other", HANG_GUARD, async (t) => {
  const address = loopbackBlock()(1);
  const origin = await startOrigin(t, { address, name: "cluster" });
  // The HTTPS port (a custom certificate, no CA reached) and DNS: TLS and DNS settings are obeyed on both nodes too.
  const nodes = await startTwoNodes(t, [
    "--origin-allow",
    "127.0.0.0/8",
    "--edge-tls-port",
    "0",
    "--acme-directory",
    "https://127.0.0.1:9/directory",
    "--edge-ipv6",
    "2001:db8::77",
  ]);
  if (!nodes) return;
  const [a, b] = nodes;
  const zone = `px${randomBytes(4).toString("hex")}.example`;
  const created = await a.api("POST", "/zones", { name: zone, account: { id: a.accountId } });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const zoneId = created.body.result.id as string;
  const record = await a.api("POST", `/zones/${zoneId}/dns_records`, { type: "A", name: "www", content: address, proxied: true });
  assert.equal(record.status, 200, JSON.stringify(record.body));
  const at = async (node: typeof a) => {
    const res = await request(`${node.url}/p`, { headers: { host: `www.${zone}` } });
    return { status: res.statusCode, location: res.headers.location, text: await res.body.text() };
  };
  await eventually(async () => (await at(b)).text === "origin cluster", "the other node forwards the name", 60_000);
  assert.equal((await at(a)).text, "origin cluster");

  const changed = await a.api("PATCH", `/zones/${zoneId}/settings/always_use_https`, { value: "on" });
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  await eventually(async () => (await at(b)).status === 301, "the other node obeys the setting", 60_000);
  assert.equal((await at(b)).location, `https://www.${zone}/p`);
  assert.equal((await b.api("GET", `/zones/${zoneId}/settings/always_use_https`)).body.result.value, "on");
  assert.ok(origin.seen.length >= 2);

  // min_tls_version and ipv6 changed through one node: the other's HTTPS port and DNS answers follow.
  const certs = testCertificates([zone, `*.${zone}`]);
  t.after(() => certs.dispose());
  const uploaded = await a.api("POST", `/zones/${zoneId}/custom_certificates`, { certificate: certs.signed.cert, private_key: certs.signed.key });
  assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
  const tls11 = (node: typeof a) =>
    new Promise<boolean>((resolve) => {
      const child = execFile(
        "openssl",
        ["s_client", "-brief", "-connect", `127.0.0.1:${tlsPortOf(node.endpoints)}`, "-servername", `www.${zone}`, "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"],
        { timeout: 30_000 },
        (_err, _stdout, stderr) => resolve(/Protocol version: TLSv1\.1/.test(stderr)),
      );
      child.stdin?.end();
    });
  const aaaa = async (node: typeof a) => (await dig(Number(node.endpoints.dns_udp.split(":").pop()), ["+short", `www.${zone}`, "AAAA"])).trim();
  await eventually(() => tls11(b), "the other node serves the uploaded certificate over TLS 1.1 (the default minimum is 1.0)", 60_000);
  assert.equal(await aaaa(b), "2001:db8::77");
  const items = [
    { id: "min_tls_version", value: "1.2" },
    { id: "ipv6", value: "off" },
  ];
  const edited = await a.api("PATCH", `/zones/${zoneId}/settings`, { items });
  assert.equal(edited.status, 200, JSON.stringify(edited.body));
  await eventually(async () => !(await tls11(b)), "the other node refuses TLS 1.1 for the zone", 60_000);
  await eventually(async () => (await aaaa(b)) === "", "the other node answers no AAAA of the edge", 60_000);
  assert.equal(await tls11(a), false);
  assert.equal(await aaaa(a), "");
});

test(
  "on two nodes (PostgreSQL), a record changed, a zone paused and a zone deleted through one node are obeyed by the other, which had served the name",
  HANG_GUARD,
  async (t) => {
    const block = loopbackBlock();
    const first = await startOrigin(t, { address: block(1), name: "first" });
    await startOrigin(t, { address: block(2), name: "second" });
    const nodes = await startTwoNodes(t, ["--origin-allow", "127.0.0.0/8"]);
    if (!nodes) return;
    const [a, b] = nodes;
    const zone = `memo${randomBytes(4).toString("hex")}.example`;
    const created = await a.api("POST", "/zones", { name: zone, account: { id: a.accountId } });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const zoneId = created.body.result.id as string;
    const record = await a.api("POST", `/zones/${zoneId}/dns_records`, { type: "A", name: "www", content: block(1), proxied: true });
    assert.equal(record.status, 200, JSON.stringify(record.body));
    const at = async (node: typeof a) => {
      const res = await request(`${node.url}/p`, { headers: { host: `www.${zone}` } });
      return { status: res.statusCode, type: String(res.headers["content-type"]), text: await res.body.text() };
    };
    // The other node answers the name (and keeps what it worked out for it) before each change.
    await eventually(async () => (await at(b)).text === "origin first", "the other node forwards the name", 60_000);
    assert.ok(first.seen.length >= 1);
    const moved = await a.api("PATCH", `/zones/${zoneId}/dns_records/${record.body.result.id}`, { content: block(2) });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    assert.equal((await at(a)).text, "origin second", "the node the change was made through: at once");
    await eventually(async () => (await at(b)).text === "origin second", "the other node forwards to the record's new address", 60_000);

    assert.equal((await a.api("PATCH", `/zones/${zoneId}`, { paused: true })).status, 200);
    await eventually(async () => (await at(b)).status === 530, "the other node answers the paused zone's 1001 page", 60_000);
    assert.match((await at(b)).text, /Error 1001/);
    assert.equal((await a.api("PATCH", `/zones/${zoneId}`, { paused: false })).status, 200);
    await eventually(async () => (await at(b)).text === "origin second", "the other node forwards again once unpaused", 60_000);

    assert.equal((await a.api("DELETE", `/zones/${zoneId}`)).status, 200);
    // On loopback a name of no zone is the API's (a JSON envelope), never the deleted zone's origin.
    await eventually(async () => /json/.test((await at(b)).type), "the other node no longer serves the deleted zone's name", 60_000);
    assert.doesNotMatch((await at(b)).text, /origin/);
  },
);
