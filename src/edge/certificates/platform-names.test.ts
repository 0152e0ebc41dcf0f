import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { connect as tlsConnect } from "node:tls";
import { after, before, test } from "node:test";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount } from "../../workers/testing/helpers.js";
import { tlsPortOf } from "../../workers/testing/tls.js";
import { testCertificates } from "../testing/origins.js";

/**
 * A tenant's zone made before the operator put the API's hostname under it (api.<corp>): its custom certificates
 * never take that name's TLS. An upload naming the platform's name is refused; a wildcard of the zone (which covers
 * api.<corp> by its words) is served for the tenant's names, never for the API's. Two accounts, the real HTTPS port.
 */
const corp = `hostile${randomBytes(3).toString("hex")}.example`;
const wildcard = testCertificates([corp, `*.${corp}`]);
const naming = testCertificates([`www.${corp}`, `api.${corp}`]);
const under = testCertificates([`*.api.${corp}`]);
const tlsArgs = ["--dns-port", "0", "--edge-tls-port", "0", "--acme-directory", "https://127.0.0.1:9/directory"];
let p: TestPlatform;
let zoneId = "";
let asB: Record<string, string> = {};

/** Whether a TLS handshake for `servername` completes on the HTTPS port, trusting `ca`. */
const handshake = (servername: string, ca: string) =>
  new Promise<"ok" | string>((resolve) => {
    const s = tlsConnect({ host: "127.0.0.1", port: tlsPortOf(p.endpoints), servername, ca, ALPNProtocols: ["http/1.1"] }, () => {
      resolve(s.authorized ? "ok" : String(s.authorizationError));
      s.destroy();
    });
    s.on("error", (err) => resolve(err.message));
  });

before(async () => {
  const first = await startTestPlatform({ args: tlsArgs });
  const accountB = await createAccount(first, "hostile-b");
  const zone = await first.api("POST", "/zones", { name: corp, account: { id: accountB } }, first.keyHeaders());
  assert.equal(zone.status, 200, JSON.stringify(zone.body));
  zoneId = zone.body.result.id;
  const token = await first.api("POST", "/user/tokens", { name: "b", permissions: ["ssl_and_certificates_edit"], account_id: accountB }, first.keyHeaders());
  assert.equal(token.status, 200, JSON.stringify(token.body));
  asB = { authorization: `Bearer ${token.body.result.value}` };
  // The operator now reaches the API at api.<corp>, inside B's zone made before.
  await first.stop();
  p = await startTestPlatform({ args: [...tlsArgs, "--api-hostname", `api.${corp}`], stateDir: first.stateDir, credentials: first });
});
after(async () => {
  await p?.dispose();
  // The restarted platform was given the first one's state directory: dispose leaves a given one in place.
  if (p) rmSync(p.stateDir, { recursive: true, force: true });
  for (const c of [wildcard, naming, under]) c.dispose();
});

test("B's upload naming the API's hostname, or a name under it, is refused with a 400 that stores nothing", async () => {
  for (const certs of [naming, under]) {
    const r = await p.api("POST", `/zones/${zoneId}/custom_certificates`, { certificate: certs.signed.cert, private_key: certs.signed.key }, asB);
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.errors[0].code, 1099);
    assert.match(r.body.errors[0].message, new RegExp(`api\\.${corp.replace(".", "\\.")} cannot be used for a custom certificate: it is api\\.`));
  }
  const listed = await p.api("GET", `/zones/${zoneId}/custom_certificates`, undefined, asB);
  assert.equal(listed.status, 200);
  assert.equal(listed.body.result.length, 0, "nothing was stored");
});

test("B's wildcard certificate of its zone is served for B's names, never for the API's hostname it covers by its words", async () => {
  const r = await p.api("POST", `/zones/${zoneId}/custom_certificates`, { certificate: wildcard.signed.cert, private_key: wildcard.signed.key }, asB);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(await handshake(`www.${corp}`, wildcard.caPem), "ok", "B's own name is served with B's certificate");
  const api = await handshake(`api.${corp}`, wildcard.caPem);
  assert.notEqual(api, "ok", "the API's hostname must not be served with B's certificate");
  // A PATCH putting a certificate naming the API's hostname in its place is refused too, and changes nothing.
  const patch = await p.api(
    "PATCH",
    `/zones/${zoneId}/custom_certificates/${r.body.result.id}`,
    { certificate: naming.signed.cert, private_key: naming.signed.key },
    asB,
  );
  assert.equal(patch.status, 400, JSON.stringify(patch.body));
  assert.deepEqual((await p.api("GET", `/zones/${zoneId}/custom_certificates/${r.body.result.id}`, undefined, asB)).body.result.hosts, [corp, `*.${corp}`]);
});
