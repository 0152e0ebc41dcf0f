import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Whether Knot (`knotd`, Debian `knot`) and `kdig` (`knot-dnsutils`) are installed; under CI they are. */
export const knotAvailable: Promise<boolean> = Promise.all(
  ["knotd", "kdig"].map((bin) => new Promise<boolean>((resolve) => execFile(bin, ["-V"], (err) => resolve(!err)))),
).then((found) => found.every(Boolean));

/** A free TCP port on loopback (Knot listens on UDP and TCP; the kernel rarely gives a port taken on one only). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Knot {
  port: number;
  pid: number;
  dir: string;
  log(): string;
  stop(): Promise<void>;
}

/**
 * Runs a private knotd (as the current user, its own config, database, zone files and control socket in a
 * temporary directory) listening on 127.0.0.1:`port`. `config` is the YAML after the `server`/`database` sections
 * (keys, remotes, acls, zones); `{dir}` in it is replaced by the instance's directory; `serverOptions`: more lines of
 * the `server` section (bench/dns sets `udp-workers`). Resolves once it answers.
 */
export async function startKnot(port: number, config: string, zoneFiles: Record<string, string> = {}, serverOptions: string[] = []): Promise<Knot> {
  const dir = mkdtempSync(join(tmpdir(), "edge-knot-"));
  for (const sub of ["db", "zones"]) mkdirSync(join(dir, sub));
  for (const [name, text] of Object.entries(zoneFiles)) writeFileSync(join(dir, "zones", name), text);
  const conf = `server:
  rundir: ${dir}
  listen: 127.0.0.1@${port}
${serverOptions.map((o) => `  ${o}\n`).join("")}log:
  - target: stdout
    any: info
database:
  storage: ${dir}/db
template:
  - id: default
    storage: ${dir}/zones
${config.replaceAll("{dir}", dir)}
`;
  writeFileSync(join(dir, "knot.conf"), conf);
  const child: ChildProcess = spawn("knotd", ["-c", join(dir, "knot.conf")], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const knot: Knot = {
    port,
    pid: child.pid!,
    dir,
    log: () => output,
    async stop() {
      child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // Ready once it has said so; a hang guard, polled rather than slept.
  const deadline = Date.now() + 30_000;
  while (!output.includes("server started")) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await knot.stop();
      throw new Error(`knotd did not start:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return knot;
}

/**
 * Knot's view of the platform under test: the TSIG key `xfr-key` (hmac-sha256, `secret`) and the remote `platform`
 * (127.0.0.1@`platformPort`, using that key), as the start of a `startKnot` config; acls and zones follow.
 */
export function platformRemote(secret: string, platformPort: number): string {
  return `key:
  - id: xfr-key
    algorithm: hmac-sha256
    secret: ${secret}
remote:
  - id: platform
    address: 127.0.0.1@${platformPort}
    key: xfr-key
`;
}

/**
 * A `startKnot` config for a Knot that is the primary of `zones` for the platform on `platformPort`: the `xfr-key`
 * and `platform` remote of platformRemote, an acl letting the key transfer and update from loopback, and each zone
 * (NOTIFYing the platform when `notify`; never writing its zone file back).
 */
export function primaryForPlatform(secret: string, platformPort: number, zones: { domain: string; notify: boolean }[]): string {
  const zoneLines = zones.map((z) => `  - domain: ${z.domain}\n${z.notify ? "    notify: platform\n" : ""}    acl: platform-xfr\n    zonefile-sync: -1\n`);
  return `${platformRemote(secret, platformPort)}acl:
  - id: platform-xfr
    address: 127.0.0.1
    key: xfr-key
    action: [transfer, update]
zone:
${zoneLines.join("")}`;
}

/**
 * A `startKnot` config for a Knot that is a secondary of the platform on `platformPort` for `zone`: it transfers from
 * the platform and takes its NOTIFYs from loopback. With `tsigSecret`, both go signed with the `xfr-key` of
 * platformRemote (Knot's acl then requires the key on the NOTIFY too).
 */
export function secondaryOfPlatform(platformPort: number, zone: string, tsigSecret?: string): string {
  const remote = tsigSecret === undefined ? `remote:\n  - id: platform\n    address: 127.0.0.1@${platformPort}\n` : platformRemote(tsigSecret, platformPort);
  return `${remote}acl:
  - id: notify-from-platform
    address: 127.0.0.1
${tsigSecret === undefined ? "" : "    key: xfr-key\n"}    action: notify
zone:
  - domain: ${zone}
    master: platform
    acl: notify-from-platform
`;
}

/**
 * Starts Knot as the platform's secondary of `zone` (secondaryOfPlatform) and waits until it answers `name` `type`
 * with an answer `loaded` matches: the first transfer is done.
 */
export async function startSecondaryKnot(
  knotPort: number,
  platformPort: number,
  zone: string,
  loaded: { name: string; type: string; answer: RegExp },
  tsigSecret?: string,
): Promise<Knot> {
  const knot = await startKnot(knotPort, secondaryOfPlatform(platformPort, zone, tsigSecret));
  try {
    await until(async () => loaded.answer.test(await kdig(knotPort, [loaded.name, loaded.type, "+short"])), `Knot to load ${zone} by AXFR`);
  } catch (err) {
    await knot.stop();
    throw err;
  }
  return knot;
}

/** Runs kdig against 127.0.0.1:`port`; its stdout (kdig exits non-zero on a failed transfer, with output). */
export function kdig(port: number, args: string[]): Promise<string> {
  return new Promise((resolve) =>
    execFile("kdig", [`@127.0.0.1`, "-p", String(port), "+time=3", "+retry=2", ...args], (_err, stdout, stderr) => resolve(stdout + stderr)),
  );
}

/** Polls until `check` holds (a hang guard of `ms`), for conditions another process brings about. */
export async function until(check: () => Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A change on a Knot primary (it takes RFC 2136 updates signed with the key, e.g. `hmac-sha256:xfr-key:<secret>`, and then NOTIFYs where configured). */
export function knsupdate(knotPort: number, keyArg: string, zone: string, lines: string[]): Promise<void> {
  const script = [`server 127.0.0.1 ${knotPort}`, `zone ${zone}.`, ...lines, "send", ""].join("\n");
  return new Promise((resolve, reject) => {
    const child = execFile("knsupdate", ["-y", keyArg], (err, stdout, stderr) => (err ? reject(new Error(`knsupdate: ${stderr || stdout}`)) : resolve()));
    child.stdin!.end(script);
  });
}
