import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestPlatform } from "../../core/testing/platform.js";
import { dig, digAvailable, startDnsPlatform } from "../testing/helpers.js";
import { freePort, knotAvailable, knsupdate, startKnot, until, type Knot } from "../testing/knot.js";

const NOTIFIED = "notified.example";
const PULLED = "pulled.example";
const zoneFile = (zone: string) => `$ORIGIN ${zone}.
$TTL 300
@ SOA ns1.${zone}. hostmaster.${zone}. 1 3600 600 86400 300
@ NS ns1.${zone}.
www A 192.0.2.80
`;

describe("edgecli dns secondary, against a platform and a Knot primary", async () => {
  const tools = (await digAvailable) && (await knotAvailable);
  const dir = mkdtempSync(join(tmpdir(), "edge-dns-secondary-cli-"));
  const secret1 = randomBytes(32).toString("base64");
  const secret2 = randomBytes(32).toString("base64");
  const secretFile = join(dir, "xfr-key2.secret");
  let p: TestPlatform;
  let port: number;
  let knot: Knot | undefined;
  let knotPort: number;
  const A = () => `/accounts/${p.accountId}/secondary_dns`;
  const answers = async (name: string, type: string) => (await dig(port, [name, type, "+short"])).trim();
  const peerNames = async () => ((await p.api("GET", `${A()}/peers`)).body.result as { name: string }[]).map((x) => x.name).sort();
  const tsigNames = async () => ((await p.api("GET", `${A()}/tsigs`)).body.result as { name: string }[]).map((x) => x.name).sort();
  const zoneNames = async () => ((await p.api("GET", "/zones")).body.result as { name: string }[]).map((x) => x.name).sort();

  before(async () => {
    if (!tools) return;
    ({ p, port } = await startDnsPlatform());
    knotPort = await freePort();
    // A file as `openssl rand -base64 32 > file` writes it: with its newline.
    writeFileSync(secretFile, `${secret2}\n`, { mode: 0o600 });
    knot = await startKnot(
      knotPort,
      `key:
  - id: xfr-key
    algorithm: hmac-sha256
    secret: ${secret1}
  - id: xfr-key2
    algorithm: hmac-sha512
    secret: ${secret2}
remote:
  - id: platform
    address: 127.0.0.1@${port}
    key: xfr-key
acl:
  - id: by-key1
    address: 127.0.0.1
    key: xfr-key
    action: [transfer, update]
  - id: by-key2
    address: 127.0.0.1
    key: xfr-key2
    action: [transfer, update]
zone:
  - domain: ${NOTIFIED}
    notify: platform
    acl: by-key1
    zonefile-sync: -1
  - domain: ${PULLED}
    acl: by-key2
    zonefile-sync: -1
`,
      { [`${NOTIFIED}.zone`]: zoneFile(NOTIFIED), [`${PULLED}.zone`]: zoneFile(PULLED) },
    );
  });
  after(async () => {
    await knot?.stop();
    await p?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it("documents each command with --help", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    for (const [cmd, mention] of [
      ["create", /--tsig-secret-file/],
      ["status", /--json/],
      ["transfer", /AXFR/],
      ["delete", /--yes/],
    ] as const) {
      const help = await p.cli(["dns", "secondary", cmd, "--help"]);
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, mention);
    }
    const group = await p.cli(["dns", "secondary", "--help"]);
    assert.match(group.stdout, /create[\s\S]*status[\s\S]*transfer[\s\S]*delete/);
  });

  it("creates a secondary zone with a TSIG secret read from stdin, and Knot's NOTIFY keeps it current", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    const created = await p.cli(
      ["dns", "secondary", "create", NOTIFIED, "--primary", `127.0.0.1:${knotPort}`, "--tsig-name", "xfr-key", "--tsig-secret-file", "-", "--ixfr"],
      {
        input: `${secret1}\n`,
      },
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(
      created.stdout,
      new RegExp(`Created secondary zone ${NOTIFIED} with id [0-9a-f]{32}, copied from 127\\.0\\.0\\.1:${knotPort} with TSIG key xfr-key`),
    );
    await until(async () => (await answers(`www.${NOTIFIED}`, "A")) === "192.0.2.80", "the first transfer");

    const status = await p.cli(["dns", "secondary", "status", NOTIFIED]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`primaries: +127\\.0\\.0\\.1:${knotPort} \\(TSIG xfr-key\\.\\) IXFR`));
    assert.match(status.stdout, /serial: +1\n/);
    assert.match(status.stdout, /last transfer: +\d{4}-\d\d-\d\dT/);
    // The next refresh is the SOA refresh (an hour) after the transfer.
    const next = Date.parse(/next refresh: +(\S+)/.exec(status.stdout)![1]);
    assert.ok(next > Date.now() + 3000 * 1000 && next < Date.now() + 3601 * 1000, status.stdout);
    assert.match(status.stdout, /served until: +\d{4}-/);
    assert.match(status.stdout, /last error: +none/);
    const json = JSON.parse((await p.cli(["dns", "secondary", "status", NOTIFIED, "--json"])).stdout);
    assert.equal(json.soa_serial, 1);
    assert.equal(json.last_error, null);
    assert.ok(json.next_refresh_time && json.expires_time);

    await knsupdate(knotPort, `hmac-sha256:xfr-key:${secret1}`, NOTIFIED, [`update add new.${NOTIFIED}. 300 A 192.0.2.90`]);
    await until(async () => (await answers(`new.${NOTIFIED}`, "A")) === "192.0.2.90", "the NOTIFY to bring serial 2");
    assert.match((await p.cli(["dns", "secondary", "status", NOTIFIED])).stdout, /serial: +2\n/);
  });

  it("creates one with a secret from a file (hmac-sha512), and `transfer` pulls a change Knot announced to no one", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    const created = await p.cli([
      "dns",
      "secondary",
      "create",
      PULLED,
      "--primary",
      `127.0.0.1:${knotPort}`,
      "--tsig-name",
      "xfr-key2.",
      "--tsig-algorithm",
      "hmac-sha512",
      "--tsig-secret-file",
      secretFile,
    ]);
    assert.equal(created.code, 0, created.stderr);
    await until(async () => (await answers(`www.${PULLED}`, "A")) === "192.0.2.80", "the first transfer");
    await knsupdate(knotPort, `hmac-sha512:xfr-key2:${secret2}`, PULLED, [`update add pulled-now.${PULLED}. 300 TXT "forced"`]);
    const forced = await p.cli(["dns", "secondary", "transfer", PULLED]);
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal(forced.stdout.trim(), `Transferred ${PULLED}: serial 2.`);
    assert.equal(await answers(`pulled-now.${PULLED}`, "TXT"), '"forced"');
    assert.deepEqual(await tsigNames(), ["xfr-key.", "xfr-key2."]);
  });

  it("reports a failing primary: transfer exits 1 with the reason, status shows it, the zone answers SERVFAIL", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    // Knot does not serve this zone: it refuses the transfer (NOTAUTH for the zone it does not have).
    const created = await p.cli(["dns", "secondary", "create", "absent.example", "--primary", `127.0.0.1:${knotPort}`, "--tsig-name", "xfr-key"]);
    assert.equal(created.code, 0, created.stderr);
    const forced = await p.cli(["dns", "secondary", "transfer", "absent.example"]);
    assert.equal(forced.code, 1);
    assert.equal(forced.stdout, "");
    assert.match(forced.stderr, /transfer failed.*127\.0\.0\.1/s);
    const status = await p.cli(["dns", "secondary", "status", "absent.example"]);
    assert.match(status.stdout, /serial: +none \(not transferred yet\)/);
    assert.match(status.stdout, /served until: +not served/);
    assert.match(status.stdout, /last error: +secondary:absent\.example:127\.0\.0\.1:\d+ \(127\.0\.0\.1:\d+\): /);
    assert.match(await dig(port, ["www.absent.example", "A"]), /status: SERVFAIL/);
  });

  it("refuses bad input on stderr with exit 1, and a create that fails half way leaves nothing behind", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    const failures: [string[], RegExp, string?][] = [
      [["create", "x.example"], /at least one --primary/],
      [["create", "x.example", "--primary", "not-an-address"], /not an address/],
      [["create", "x.example", "--primary", "127.0.0.1:70000"], /not an address/],
      [["create", "x.example", "--primary", "127.0.0.1", "--tsig-secret-file", secretFile], /needs --tsig-name/],
      [["create", "x.example", "--primary", "127.0.0.1", "--tsig-name", "unknown-key"], /no TSIG key unknown-key/],
      [["create", "x.example", "--primary", "127.0.0.1", "--tsig-name", "new-key", "--tsig-secret-file", join(dir, "missing")], /Cannot read the TSIG secret/],
      [["create", "x.example", "--primary", "127.0.0.1", "--tsig-name", "xfr-key", "--tsig-secret-file", secretFile], /already has a TSIG key xfr-key\./],
      // Secrets never on the command line, where `ps` shows them.
      [["create", "x.example", "--primary", "127.0.0.1", "--tsig-name", "k", "--tsig-secret", secret1], /tsig-secret/],
      [["create", "x.example", "--primary", "127.0.0.1", "--tsig-name", "short-key", "--tsig-secret-file", "-"], /secret: base64/, "c2hvcnQ="],
      [["status", "nope.example"], /no zone nope\.example/],
      [["transfer", "nope.example"], /no zone nope\.example/],
    ];
    const peersBefore = await peerNames();
    for (const [args, message, input] of failures) {
      const r = await p.cli(["dns", "secondary", ...args], { input });
      assert.equal(r.code, 1, `${args.join(" ")}: ${r.stdout}`);
      assert.match(r.stderr, message, args.join(" "));
    }
    // The key and peer are made before the zone, whose creation fails (the name is taken by a full zone): both removed.
    assert.equal((await p.cli(["dns", "zone", "create", "taken.example"])).code, 0);
    const taken = await p.cli([
      "dns",
      "secondary",
      "create",
      "taken.example",
      "--primary",
      "127.0.0.1",
      "--tsig-name",
      "rolled-back",
      "--tsig-secret-file",
      secretFile,
    ]);
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /already exists/);
    const full = await p.cli(["dns", "secondary", "status", "taken.example"]);
    assert.equal(full.code, 1);
    assert.match(full.stderr, /taken\.example is not a secondary zone/);
    assert.deepEqual(await peerNames(), peersBefore);
    assert.deepEqual(await tsigNames(), ["xfr-key.", "xfr-key2."]);
    assert.ok(!(await zoneNames()).includes("x.example"));
  });

  it("deletes a secondary zone with its own peers, and its TSIG key once no peer uses it", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    assert.equal((await p.cli(["dns", "secondary", "delete", "absent.example", "--yes"])).code, 0);
    // absent.example used xfr-key too: the key stays while notified.example's peer uses it.
    assert.deepEqual(await tsigNames(), ["xfr-key.", "xfr-key2."]);
    const deleted = await p.cli(["dns", "secondary", "delete", NOTIFIED, "--yes"]);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal(deleted.stdout.trim(), `Deleted secondary zone ${NOTIFIED}.`);
    assert.match(await dig(port, [`www.${NOTIFIED}`, "A"]), /status: REFUSED/);
    assert.deepEqual(await tsigNames(), ["xfr-key2."]);
    assert.deepEqual(await peerNames(), [`secondary:${PULLED}:127.0.0.1:${knotPort}`]);
    assert.deepEqual(await zoneNames(), [PULLED, "taken.example"]);
    const full = await p.cli(["dns", "secondary", "delete", "taken.example", "--yes"]);
    assert.equal(full.code, 1, "a full zone is deleted with `dns zone delete`");
  });
});
