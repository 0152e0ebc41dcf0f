import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createServer, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { after, before, describe, it } from "node:test";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount } from "../../workers/testing/helpers.js";
import { tlsPortOf } from "../../workers/testing/tls.js";
import { loopbackBlock, startOrigin, testCertificates } from "../testing/origins.js";
import { parseClientHello } from "./client-hello.js";

type Version = "tls1" | "tls1_1" | "tls1_2" | "tls1_3";

/**
 * The zone settings min_tls_version and tls_1_3 on the HTTPS port, per SNI name: two accounts' zones on one port,
 * each with its own bounds, checked with openssl s_client pinned to one version and with curl's --tlsv1.x/--tls-max.
 */
describe("min_tls_version and tls_1_3 on the HTTPS port, per zone", () => {
  const addr = loopbackBlock();
  const certsA = testCertificates(["tv-a.example", "*.tv-a.example"]);
  const certsB = testCertificates(["tv-b.example", "*.tv-b.example"]);
  let p: TestPlatform;
  let tlsPort = 0;
  let zoneA = "";
  let zoneB = "";
  let tokenA = "";
  let tokenB = "";
  const cleanups: (() => unknown)[] = [];
  const hooks = { after: (fn: () => unknown) => void cleanups.push(fn) };
  const as = (token: string) => ({ authorization: `Bearer ${token}` });
  const setting = async (zoneId: string, id: string, value: string, token = tokenA) => {
    const r = await p.api("PATCH", `/zones/${zoneId}/settings/${id}`, { value }, as(token));
    assert.equal(r.status, 200, JSON.stringify(r.body));
  };

  /** openssl s_client pinned to one version: the version it settled on, or undefined when the handshake failed. */
  const sClient = (host: string, caFile: string, version: Version) =>
    new Promise<string | undefined>((resolve) => {
      const child = execFile(
        "openssl",
        // TLS 1.0/1.1 need the client's security level lowered too (Debian's OpenSSL refuses SHA-1 signatures).
        ["s_client", "-brief", "-connect", `127.0.0.1:${tlsPort}`, "-servername", host, "-CAfile", caFile, `-${version}`, "-cipher", "DEFAULT@SECLEVEL=0"],
        { timeout: 30_000 },
        // -brief: "Protocol version: TLSv1.2" on stderr once the handshake is done.
        (_err, _stdout, stderr) => resolve(/Protocol version: (TLSv[\d.]+)/.exec(stderr)?.[1]),
      );
      child.stdin?.end();
    });
  /** curl over HTTPS with extra TLS flags: exit code, the TLS version it reports and the body. */
  const curl = (host: string, caFile: string, flags: string[]) =>
    new Promise<{ code: number; version?: string; body: string }>((resolve) =>
      execFile(
        "curl",
        ["-sv", "--max-time", "30", ...flags, "--resolve", `${host}:${tlsPort}:127.0.0.1`, "--cacert", caFile, `https://${host}:${tlsPort}/`],
        (err, stdout, stderr) =>
          resolve({
            code: err ? Number((err as { code?: number }).code ?? 1) : 0,
            version: /SSL connection using (TLSv[\d.]+)/.exec(stderr)?.[1],
            body: stdout,
          }),
      ),
    );

  before(async () => {
    await startOrigin(hooks, { address: addr(1), name: "a" });
    await startOrigin(hooks, { address: addr(2), name: "b" });
    p = await startTestPlatform({ args: ["--edge-tls-port", "0", "--acme-directory", "https://127.0.0.1:9/directory", "--origin-allow", "127.0.0.0/8"] });
    tlsPort = tlsPortOf(p.endpoints);
    const accountB = await createAccount(p, "tv-b");
    zoneA = (await p.api("POST", "/zones", { name: "tv-a.example", account: { id: p.accountId } }, p.keyHeaders())).body.result.id;
    zoneB = (await p.api("POST", "/zones", { name: "tv-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
    for (const [zone, content, certs] of [
      [zoneA, addr(1), certsA],
      [zoneB, addr(2), certsB],
    ] as const) {
      const r = await p.api("POST", `/zones/${zone}/dns_records`, { type: "A", name: "www", content, proxied: true }, p.keyHeaders());
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const c = await p.api("POST", `/zones/${zone}/custom_certificates`, { certificate: certs.signed.cert, private_key: certs.signed.key }, p.keyHeaders());
      assert.equal(c.status, 200, JSON.stringify(c.body));
    }
    const token = async (accountId: string) => {
      const r = await p.api("POST", "/user/tokens", { name: "settings", permissions: ["zone_settings_edit"], account_id: accountId }, p.keyHeaders());
      return r.body.result.value as string;
    };
    tokenA = await token(p.accountId);
    tokenB = await token(accountB);
  });
  after(async () => {
    for (const c of cleanups.reverse()) await c();
    await p?.dispose();
    certsA.dispose();
    certsB.dispose();
  });

  it("by default (min 1.0, TLS 1.3 on) every version from 1.0 to 1.3 connects and reaches the origin", async () => {
    for (const [v, expected] of [
      ["tls1", "TLSv1"],
      ["tls1_1", "TLSv1.1"],
      ["tls1_2", "TLSv1.2"],
      ["tls1_3", "TLSv1.3"],
    ] as const)
      assert.equal(await sClient("www.tv-a.example", certsA.caFile, v), expected, v);
    const r = await curl("www.tv-a.example", certsA.caFile, []);
    assert.equal(r.code, 0);
    assert.equal(r.version, "TLSv1.3");
    assert.equal(r.body, "origin a");
  });

  it("min_tls_version 1.2 fails the handshakes of TLS 1.0 and 1.1 for that zone's names only", async () => {
    await setting(zoneA, "min_tls_version", "1.2");
    assert.equal(await sClient("www.tv-a.example", certsA.caFile, "tls1"), undefined);
    assert.equal(await sClient("www.tv-a.example", certsA.caFile, "tls1_1"), undefined);
    assert.equal(await sClient("www.tv-a.example", certsA.caFile, "tls1_2"), "TLSv1.2");
    assert.equal(await sClient("www.tv-a.example", certsA.caFile, "tls1_3"), "TLSv1.3");
    // The other account's zone, on the same port, keeps its own (default) minimum.
    assert.equal(await sClient("www.tv-b.example", certsB.caFile, "tls1"), "TLSv1");
    const r = await curl("www.tv-a.example", certsA.caFile, ["--tlsv1.0", "--tls-max", "1.1"]);
    assert.notEqual(r.code, 0, "curl capped at TLS 1.1 is refused");
  });

  it("tls_1_3 off gives at most TLS 1.2 for that zone; curl --tlsv1.3 fails, curl without flags gets 1.2", async () => {
    await setting(zoneA, "tls_1_3", "off");
    assert.equal(await sClient("www.tv-a.example", certsA.caFile, "tls1_3"), undefined);
    assert.equal(await sClient("www.tv-a.example", certsA.caFile, "tls1_2"), "TLSv1.2");
    assert.equal(await sClient("www.tv-b.example", certsB.caFile, "tls1_3"), "TLSv1.3");
    const plain = await curl("www.tv-a.example", certsA.caFile, []);
    assert.equal(plain.code, 0);
    assert.equal(plain.version, "TLSv1.2");
    assert.equal(plain.body, "origin a");
    assert.notEqual((await curl("www.tv-a.example", certsA.caFile, ["--tlsv1.3"])).code, 0);
    assert.equal((await curl("www.tv-b.example", certsB.caFile, ["--tlsv1.3"])).version, "TLSv1.3");
  });

  it("min_tls_version 1.3 accepts only TLS 1.3 (whatever tls_1_3 says); the other account cannot change this zone's", async () => {
    await setting(zoneA, "min_tls_version", "1.3");
    assert.equal(await sClient("www.tv-a.example", certsA.caFile, "tls1_2"), undefined);
    assert.equal(await sClient("www.tv-a.example", certsA.caFile, "tls1_3"), "TLSv1.3");
    const r = await curl("www.tv-a.example", certsA.caFile, ["--tls-max", "1.2"]);
    assert.notEqual(r.code, 0);
    const other = await p.api("PATCH", `/zones/${zoneA}/settings/min_tls_version`, { value: "1.0" }, as(tokenB));
    assert.equal(other.status, 404);
    await setting(zoneB, "min_tls_version", "1.1", tokenB);
    assert.equal(await sClient("www.tv-a.example", certsA.caFile, "tls1_2"), undefined, "B's change is not A's");
    assert.equal(await sClient("www.tv-b.example", certsB.caFile, "tls1"), undefined);
    assert.equal(await sClient("www.tv-b.example", certsB.caFile, "tls1_1"), "TLSv1.1");
  });
});

describe("ClientHello server names (client-hello.ts)", () => {
  /** A real ClientHello, as Node's TLS client sends it for `servername`. */
  const hello = (servername?: string) =>
    new Promise<Buffer>((resolve, reject) => {
      const server = createServer((s: Socket) => {
        s.once("data", (d: Buffer) => {
          resolve(d);
          s.destroy();
          server.close();
        });
      });
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as { port: number }).port;
        const c = tlsConnect({ host: "127.0.0.1", port, ...(servername ? { servername } : {}), rejectUnauthorized: false });
        c.on("error", () => c.destroy());
      });
      server.on("error", reject);
    });

  it("reads the name of a whole hello, of one split over two records, and none from garbage or a hello without SNI", async () => {
    const whole = await hello("WWW.Example.com");
    assert.deepEqual(parseClientHello(whole), { servername: "www.example.com" });
    assert.equal(parseClientHello(whole.subarray(0, 40)), "more");
    // The same handshake message in two records of its own.
    const body = whole.subarray(5);
    const record = (b: Buffer) => Buffer.concat([Buffer.from([0x16, 0x03, 0x01, b.length >> 8, b.length & 0xff]), b]);
    const split = Buffer.concat([record(body.subarray(0, 30)), record(body.subarray(30))]);
    assert.deepEqual(parseClientHello(split), { servername: "www.example.com" });
    assert.equal(parseClientHello(split.subarray(0, 40)), "more");
    assert.equal(parseClientHello(Buffer.from("GET / HTTP/1.1\r\n\r\n")), "invalid");
    assert.deepEqual(parseClientHello(await hello()), { servername: undefined });
  });
});
