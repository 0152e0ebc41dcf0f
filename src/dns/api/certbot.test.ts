import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createZone, startDnsPlatform } from "../testing/helpers.js";

const have = (cmd: string) => spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;
const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

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
    const missing = ["certbot", "pebble", "openssl"].filter((c) => !have(c));
    // The plugin as Debian installs it, for the system Python certbot runs on.
    if (!existsSync("/usr/lib/python3/dist-packages/certbot_dns_cloudflare")) missing.push("python3-certbot-dns-cloudflare");
    if (missing.length) {
      return t.skip(`needs Debian certbot, python3-certbot-dns-cloudflare, pebble and openssl (missing: ${missing.join(", ")})`);
    }
    const { p, port } = await startDnsPlatform();
    children.push(p.process);
    const zoneId = await createZone(p, "acme.example");

    const f = (n: string) => join(dir, n);
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f("ca.key"), "-out", f("ca.pem"), "-days", "2", "-subj", "/CN=test ca"],
      { stdio: "ignore" },
    );
    execFileSync("openssl", ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", f("leaf.key"), "-out", f("leaf.csr"), "-subj", "/CN=localhost"], {
      stdio: "ignore",
    });
    writeFileSync(f("ext.cnf"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
    execFileSync(
      "openssl",
      [
        "x509",
        "-req",
        "-in",
        f("leaf.csr"),
        "-CA",
        f("ca.pem"),
        "-CAkey",
        f("ca.key"),
        "-CAcreateserial",
        "-out",
        f("leaf.pem"),
        "-days",
        "2",
        "-extfile",
        f("ext.cnf"),
      ],
      { stdio: "ignore" },
    );
    const [acmePort, mgmtPort] = [await freePort(), await freePort()];
    writeFileSync(
      f("pebble.json"),
      JSON.stringify({
        pebble: {
          listenAddress: `127.0.0.1:${acmePort}`,
          managementListenAddress: `127.0.0.1:${mgmtPort}`,
          certificate: f("leaf.pem"),
          privateKey: f("leaf.key"),
          httpPort: 5002,
          tlsPort: 5001,
          ocspResponderURL: "",
          externalAccountBindingRequired: false,
        },
      }),
    );
    const pebble = spawn("pebble", ["-config", f("pebble.json"), "-dnsserver", `127.0.0.1:${port}`], {
      env: { ...process.env, PEBBLE_VA_NOSLEEP: "1", PEBBLE_WFE_NONCEREJECT: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(pebble);
    await new Promise<void>((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error(`pebble did not start: ${out}`)), 15000);
      const on = (d: Buffer) => {
        out += d.toString();
        if (out.includes("Listening on")) {
          clearTimeout(timer);
          resolve();
        }
      };
      pebble.stdout!.on("data", on);
      pebble.stderr!.on("data", on);
    });

    writeFileSync(f("cf.ini"), `dns_cloudflare_api_token = ${p.token}\n`, { mode: 0o600 });
    const args = ["certonly", "--non-interactive", "--agree-tos", "-m", "admin@acme.example", "--server", `https://127.0.0.1:${acmePort}/dir`];
    args.push("--dns-cloudflare", "--dns-cloudflare-credentials", f("cf.ini"), "--dns-cloudflare-propagation-seconds", "1");
    args.push("-d", "www.acme.example", "-d", "acme.example", "--config-dir", f("cfg"), "--work-dir", f("work"), "--logs-dir", f("logs"));
    const run = await new Promise<{ code: number; out: string }>((resolve) =>
      execFile(
        "certbot",
        args,
        { env: { ...process.env, CLOUDFLARE_API_URL: p.apiUrl, REQUESTS_CA_BUNDLE: f("ca.pem") }, timeout: 90000 },
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
