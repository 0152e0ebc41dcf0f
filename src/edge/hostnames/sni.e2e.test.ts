import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { haveCommand, startPebble, type Pebble } from "../../dns/testing/pebble.js";
import { createAccount, startPlatform, uploadScript } from "../../workers/testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";
import { fetchPem, startDnsForwarder, tlsPortOf } from "../../workers/testing/tls.js";

/**
 * On the HTTPS port a request's Host must name the host its connection's SNI did (issue 30, hole 10): with real
 * certificates from pebble for a Custom Domain of each of two accounts, curl opens a connection for B's name and
 * asks for A's, or for the API: 421 Misdirected Request, so B's certificate never fronts A's Worker or the platform.
 */
const missing = ["pebble", "openssl", "curl"].filter((c) => !haveCommand(c));
const dir = mkdtempSync(join(tmpdir(), "edge-sni-"));
let p: TestPlatform | undefined;
let pebble: Pebble | undefined;
let forwarder: { port: number; close(): void } | undefined;
let tlsPort = 0;
let dnsTarget = 0;
const rootFile = join(dir, "pebble-root.pem");

before(async () => {
  if (missing.length) return;
  forwarder = await startDnsForwarder(() => [dnsTarget]);
  pebble = await startPebble(dir, `127.0.0.1:${forwarder.port}`);
  p = await startPlatform([
    "--edge-tls-port",
    "0",
    "--acme-directory",
    pebble.directory,
    "--acme-ca-file",
    pebble.serverCaFile,
    "--acme-email",
    "ops@sni-a.example",
  ]);
  dnsTarget = Number(p.endpoints.dns_udp.split(":").pop());
  tlsPort = tlsPortOf(p.endpoints);
  writeFileSync(rootFile, await fetchPem(`${pebble.managementUrl}/roots/0`, pebble.serverCaFile));
});

after(async () => {
  await p?.dispose();
  pebble?.process.kill("SIGTERM");
  forwarder?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** curl to the HTTPS port: a connection for `sni` (checked against pebble's root), asking for `host`; status and body. */
function curl(sni: string, host: string, path = "/", headers: string[] = []): Promise<{ code: number; status: number; body: string; err: string }> {
  return new Promise((resolve) =>
    execFile(
      "curl",
      [
        "-sS",
        "--max-time",
        "60",
        "--resolve",
        `${sni}:${tlsPort}:127.0.0.1`,
        "--cacert",
        rootFile,
        "-H",
        `Host: ${host}`,
        ...headers.flatMap((h) => ["-H", h]),
        "-w",
        "\n%{http_code}",
        `https://${sni}:${tlsPort}${path}`,
      ],
      (err, stdout, stderr) => {
        const cut = stdout.lastIndexOf("\n");
        resolve({
          code: err ? Number((err as { code?: number }).code ?? 1) : 0,
          status: Number(stdout.slice(cut + 1)),
          body: stdout.slice(0, cut),
          err: stderr,
        });
      },
    ),
  );
}

test("Host other than the SNI on the HTTPS port: 421, never another account's Worker, the API or the dashboard", async (t) => {
  if (missing.length) return t.skip(`needs pebble, openssl and curl (missing: ${missing.join(", ")})`);
  const accountB = await createAccount(p!, "sni-b");
  for (const [name, account] of [
    ["sni-a.example", p!.accountId],
    ["sni-b.example", accountB],
  ]) {
    assert.equal((await p!.api("POST", "/zones", { name, account: { id: account } }, p!.keyHeaders())).status, 200);
  }
  const worker = (label: string) => `export default { fetch: () => new Response("${label}") };`;
  assert.equal((await uploadScript(p!, "sni-app-a", worker("A"))).status, 200);
  assert.equal((await uploadScript(p!, "sni-app-b", worker("B"), {}, { accountId: accountB, headers: p!.keyHeaders() })).status, 200);
  const attach = (hostname: string, service: string, accountId: string) =>
    p!.api("PUT", `/accounts/${accountId}/workers/domains`, { hostname, service, environment: "production" }, p!.keyHeaders());
  const a = await attach("shop.sni-a.example", "sni-app-a", p!.accountId);
  const b = await attach("shop.sni-b.example", "sni-app-b", accountB);
  assert.equal(b.status, 200, JSON.stringify(b.body));
  const active = async (accountId: string, id: string) =>
    (await p!.api("GET", `/accounts/${accountId}/workers/domains/${id}`, undefined, p!.keyHeaders())).body.result.certificate.status === "active";
  // Generous: a hang guard for orders on a busy machine, not a timing check.
  await eventually(() => active(p!.accountId, a.body.result.id), "shop.sni-a.example's certificate", 180_000);
  await eventually(() => active(accountB, b.body.result.id), "shop.sni-b.example's certificate", 180_000);

  const own = await curl("shop.sni-b.example", "shop.sni-b.example:" + tlsPort);
  assert.equal(own.code, 0, own.err);
  assert.deepEqual([own.status, own.body], [200, "B"], "Host = SNI (with the port, any case) is served");
  assert.equal((await curl("shop.sni-b.example", "SHOP.sni-b.example.")).body, "B");

  const other = await curl("shop.sni-b.example", "shop.sni-a.example");
  assert.equal(other.status, 421, other.body);
  assert.doesNotMatch(other.body, /^A$/);
  const api = await curl("shop.sni-b.example", "127.0.0.1", "/client/v4/user/tokens/verify", [`Authorization: Bearer ${p!.token}`]);
  assert.equal(api.status, 421, api.body);
  assert.doesNotMatch(api.body, /"success"/);
  const dash = await curl("shop.sni-b.example", "localhost", "/dash/");
  assert.equal(dash.status, 421);
  assert.match(dash.body, /Misdirected Request/);
});
