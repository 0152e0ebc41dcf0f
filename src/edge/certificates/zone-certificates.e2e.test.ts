import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { eventually } from "../../core/testing/eventually.js";
import { haveCommand } from "../../dns/testing/pebble.js";
import { createAccount } from "../../workers/testing/helpers.js";
import { type AcmePlatform, curlTls, startAcmePlatform } from "../../workers/testing/tls.js";
import { loopbackBlock, startOrigin, testCertificates } from "../testing/origins.js";

/**
 * Every zone with a proxied record gets one edge certificate for its apex and `*.zone`, ordered from pebble by DNS-01
 * answered in our own DNS, shown as a `universal` certificate pack; a custom certificate wins for the names it covers.
 */
const missing = ["pebble", "openssl", "curl"].filter((c) => !haveCommand(c));
const dir = mkdtempSync(join(tmpdir(), "edge-zone-certs-"));
const addr = loopbackBlock();
const cleanups: (() => unknown)[] = [];
let acme: AcmePlatform | undefined;
let accountB = "";
/** Generous: a hang guard for orders on a busy machine, not a timing check. */
const ORDER_GUARD_MS = 180_000;

before(async () => {
  if (missing.length) return;
  await startOrigin({ after: (fn: () => unknown) => void cleanups.push(fn) }, { address: addr(1), name: "uni" });
  acme = await startAcmePlatform(dir, ["--origin-allow", "127.0.0.0/8"]);
  accountB = await createAccount(acme.p, "uni-b");
});
after(async () => {
  for (const c of cleanups) await c();
  await acme?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** curl --http2 to `host` on the HTTPS port trusting `caFile`: exit code, HTTP version, body. */
const curl2 = (host: string, caFile: string) =>
  new Promise<{ code: number; version: string; body: string }>((resolve) =>
    execFile(
      "curl",
      [
        "-sS",
        "--http2",
        "--max-time",
        "60",
        "--resolve",
        `${host}:${acme!.tlsPort}:127.0.0.1`,
        "--cacert",
        caFile,
        "-w",
        "\n%{http_version}",
        `https://${host}:${acme!.tlsPort}/`,
      ],
      (err, stdout) => {
        const nl = stdout.lastIndexOf("\n");
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, body: stdout.slice(0, nl), version: stdout.slice(nl + 1) });
      },
    ),
  );

test("a zone with a proxied record gets a certificate for its apex and *.zone, shown as a universal pack; a custom certificate wins where it covers", async (t) => {
  if (missing.length) return t.skip(`needs ${missing.join(", ")}`);
  const p = acme!.p;
  const zone = (await p.api("POST", "/zones", { name: "uni-a.example", account: { id: p.accountId } }, p.keyHeaders())).body.result.id as string;
  const zoneB = (await p.api("POST", "/zones", { name: "uni-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id as string;
  // A zone without a proxied record has no pack; a DNS-only record does not make one.
  await p.api("POST", `/zones/${zone}/dns_records`, { type: "A", name: "plain", content: addr(1), proxied: false }, p.keyHeaders());
  assert.deepEqual((await p.api("GET", `/zones/${zone}/ssl/certificate_packs`)).body.result, []);
  const made = await p.api("POST", `/zones/${zone}/dns_records`, { type: "A", name: "www", content: addr(1), proxied: true }, p.keyHeaders());
  assert.equal(made.status, 200, JSON.stringify(made.body));

  const packs = async () => (await p.api("GET", `/zones/${zone}/ssl/certificate_packs`)).body.result as Record<string, unknown>[];
  await eventually(async () => (await packs())[0]?.status === "active", "the zone's universal pack active", ORDER_GUARD_MS);
  const [pack] = await packs();
  assert.equal(pack.type, "universal");
  assert.deepEqual(pack.hosts, ["uni-a.example", "*.uni-a.example"]);
  assert.equal(pack.validation_method, "txt");
  assert.equal((pack.certificates as unknown[]).length, 1);
  assert.equal((await p.api("GET", `/zones/${zone}/ssl/certificate_packs/${pack.id as string}`)).body.result.id, pack.id);
  // Another account's token never sees this zone's packs.
  const tokenB = (await p.api("POST", "/user/tokens", { name: "b", permissions: ["ssl_and_certificates_edit"], account_id: accountB }, p.keyHeaders())).body
    .result.value as string;
  assert.equal((await p.api("GET", `/zones/${zone}/ssl/certificate_packs`, undefined, { authorization: `Bearer ${tokenB}` })).status, 404);
  assert.deepEqual((await p.api("GET", `/zones/${zoneB}/ssl/certificate_packs`, undefined, { authorization: `Bearer ${tokenB}` })).body.result, []);

  // The apex and any one-label name are served with it, verified against pebble's root, over HTTP/2.
  for (const host of ["www.uni-a.example", "anything.uni-a.example"]) {
    const r = await curl2(host, acme!.rootFile);
    assert.equal(r.code, 0, host);
    assert.equal(r.version, "2");
  }
  assert.equal((await curl2("www.uni-a.example", acme!.rootFile)).body, "origin uni");
  assert.equal((await curlTls("uni-a.example", acme!.tlsPort, acme!.rootFile)).code, 0, "the apex is on the certificate");
  // Two labels down is not covered by *.zone: no certificate, no handshake.
  assert.notEqual((await curlTls("a.b.uni-a.example", acme!.tlsPort, acme!.rootFile)).code, 0);

  // A custom certificate for www wins there; other names keep the ordered one.
  const custom = testCertificates(["www.uni-a.example"]);
  try {
    const up = await p.api("POST", `/zones/${zone}/custom_certificates`, { certificate: custom.signed.cert, private_key: custom.signed.key }, p.keyHeaders());
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.equal((await curl2("www.uni-a.example", custom.caFile)).code, 0);
    assert.notEqual((await curl2("www.uni-a.example", acme!.rootFile)).code, 0, "not the ordered one any more");
    assert.equal((await curl2("anything.uni-a.example", acme!.rootFile)).code, 0);
  } finally {
    custom.dispose();
  }
});
