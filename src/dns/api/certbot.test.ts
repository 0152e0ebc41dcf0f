import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createZone, startDnsPlatform } from "../testing/helpers.js";
import { haveCommand, startPebble } from "../testing/pebble.js";

/**
 * The whole DNS-01 flow with real clients: certbot with its Cloudflare plugin (Debian certbot 2.1,
 * python3-certbot-dns-cloudflare 2.0, python3-cloudflare 2.11 via CLOUDFLARE_API_URL) creates the
 * TXT records through our API, and the pebble ACME server checks them by asking our DNS server.
 */
describe("certbot DNS-01 against the platform, validated by pebble through our DNS server", () => {
  const children: ChildProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), "edge-certbot-"));
  after(() => {
    for (const c of children) c.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  });

  it("issues a certificate for two names and cleans its records up", async (t) => {
    const missing = ["certbot", "pebble", "openssl"].filter((c) => !haveCommand(c));
    // The plugin as Debian installs it, for the system Python certbot runs on.
    if (!existsSync("/usr/lib/python3/dist-packages/certbot_dns_cloudflare")) missing.push("python3-certbot-dns-cloudflare");
    if (missing.length) {
      return t.skip(`needs Debian certbot, python3-certbot-dns-cloudflare, pebble and openssl (missing: ${missing.join(", ")})`);
    }
    const { p, port } = await startDnsPlatform();
    children.push(p.process);
    const zoneId = await createZone(p, "acme.example");

    const f = (n: string) => join(dir, n);
    const pebble = await startPebble(dir, `127.0.0.1:${port}`);
    children.push(pebble.process);

    writeFileSync(f("cf.ini"), `dns_cloudflare_api_token = ${p.token}\n`, { mode: 0o600 });
    const args = ["certonly", "--non-interactive", "--agree-tos", "-m", "admin@acme.example", "--server", pebble.directory];
    args.push("--dns-cloudflare", "--dns-cloudflare-credentials", f("cf.ini"), "--dns-cloudflare-propagation-seconds", "1");
    args.push("-d", "www.acme.example", "-d", "acme.example", "--config-dir", f("cfg"), "--work-dir", f("work"), "--logs-dir", f("logs"));
    const run = await new Promise<{ code: number; out: string }>((resolve) =>
      execFile(
        "certbot",
        args,
        { env: { ...process.env, CLOUDFLARE_API_URL: p.apiUrl, REQUESTS_CA_BUNDLE: pebble.serverCaFile }, timeout: 90000 },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
      ),
    );
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, /Successfully received certificate/);
    const cert = execFileSync("openssl", ["x509", "-in", f("cfg/live/www.acme.example/cert.pem"), "-noout", "-ext", "subjectAltName"]).toString();
    assert.match(cert, /DNS:www\.acme\.example, DNS:acme\.example/);
    const left = await p.api("GET", `/zones/${zoneId}/dns_records`);
    assert.deepEqual(left.body.result, [], "certbot deleted its TXT records");
    assert.ok(readFileSync(f("logs/letsencrypt.log"), "utf8").includes("_acme-challenge"), "the plugin worked through our API");
    await p.dispose();
  });
});
