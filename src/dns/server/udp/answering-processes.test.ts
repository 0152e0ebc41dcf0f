import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli, type TestPlatform } from "../../../core/testing/platform.js";
import {
  clientPortAnsweredBy,
  createRecord,
  createZone,
  encodeQuery,
  rcodeOf,
  startDnsPlatform,
  tcpQuery,
  udpQuery,
  udpRaw,
  type DnsResponse,
} from "../../testing/helpers.js";
import * as packet from "dns-packet";

const Z = "answering.example";
const addresses = (r: DnsResponse) => (r.answers ?? []).filter((a) => a.type === "A").map((a: any) => a.data as string);

/** State letter of a process (R, S, T for stopped, Z for exited but not reaped), or undefined when it is gone. */
function procState(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1][0];
  } catch {
    return undefined;
  }
}
const gone = (pid: number) => ["Z", "X", undefined].includes(procState(pid));

/** The UDP answering processes: children of the platform running the answering-process entry. */
function answeringPids(platformPid: number): number[] {
  const pids: number[] = [];
  for (const task of readdirSync(`/proc/${platformPid}/task`)) {
    for (const c of readFileSync(`/proc/${platformPid}/task/${task}/children`, "utf8").split(" ").filter(Boolean)) {
      const pid = Number(c);
      if (!gone(pid) && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("answering-process")) pids.push(pid);
    }
  }
  return pids.sort((a, b) => a - b);
}

/** Pids of answering processes that reported their socket bound, from the platform's log. */
const readyPids = (p: TestPlatform) => [...p.logs().matchAll(/"child_pid":(\d+)[^\n]*"dns answering process started"/g)].map((m) => Number(m[1]));

async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`gave up waiting: ${what}`);
}

/** Inodes of the UDP sockets bound to `port` (any address), from /proc/net/udp and udp6. */
function udpSocketInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ["/proc/net/udp", "/proc/net/udp6"]) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && parseInt(f[1].split(":")[1], 16) === port) inodes.add(f[9]);
    }
  }
  return inodes;
}

/** Which of `inodes` a process holds open. */
function socketsHeld(pid: number, inodes: Set<string>): string[] {
  const held: string[] = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let link = "";
    try {
      link = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed meanwhile
    }
    const inode = link.match(/^socket:\[(\d+)\]$/)?.[1];
    if (inode && inodes.has(inode)) held.push(inode);
  }
  return held;
}

/** Kills one answering process and waits for the one started in its place. */
async function killOne(p: TestPlatform): Promise<{ victim: number; survivor: number; fresh: number }> {
  const [victim, survivor] = answeringPids(p.process.pid!);
  process.kill(victim, "SIGKILL");
  let fresh = 0;
  await until("a replacement process bound the socket", () => {
    fresh = readyPids(p).find((pid) => pid !== victim && pid !== survivor && !gone(pid)) ?? 0;
    return fresh > 0;
  });
  return { victim, survivor, fresh };
}

describe("DNS over UDP answered by several processes (--dns-workers)", () => {
  let p: TestPlatform;
  let port: number;
  let zoneId: string;

  before(async () => {
    ({ p, port } = await startDnsPlatform(["--dns-workers", "2"]));
    zoneId = await createZone(p, Z);
  });
  after(() => p?.dispose());

  it("starts the asked number of processes, each answering from the zones, with TCP still answered", async () => {
    const pids = answeringPids(p.process.pid!);
    assert.equal(pids.length, 2);
    assert.deepEqual(
      [...readyPids(p)].sort((a, b) => a - b),
      pids,
      "both reported their socket bound before the platform was ready",
    );
    await createRecord(p, zoneId, { type: "A", name: "www", content: "10.9.0.1", ttl: 300 });
    for (const pid of pids) {
      // From a port that only this process reads: the first asks the main process (not cached yet), the second comes
      // from the process's own cache.
      const from = await clientPortAnsweredBy(port, pids, pid);
      for (let i = 0; i < 2; i++) assert.deepEqual(addresses(await udpQuery(port, `www.${Z}`, "A", { from })), ["10.9.0.1"], `process ${pid}, query ${i + 1}`);
      assert.equal(rcodeOf(await udpQuery(port, `nothing.${Z}`, "A", { from })), 3, "NXDOMAIN");
    }
    const [tcp] = await tcpQuery(port, encodeQuery(`www.${Z}`, "A"));
    assert.deepEqual(addresses(tcp), ["10.9.0.1"]);
  });

  it("gives each answering process a socket of its own on the DNS port (SO_REUSEPORT), the main process none (native path)", () => {
    const pids = answeringPids(p.process.pid!);
    const inodes = udpSocketInodes(port);
    assert.deepEqual(socketsHeld(p.process.pid!, inodes), [], "the main process holds no UDP socket on the port (nobody would read its share)");
    const held = pids.map((pid) => socketsHeld(pid, inodes));
    for (const [i, h] of held.entries()) assert.equal(h.length, 1, `process ${pids[i]} holds one socket on the port`);
    assert.equal(new Set(held.flat()).size, pids.length, "and not the same one");
    assert.equal(inodes.size, pids.length, "no other socket on the port");
  });

  it("sends the answer to a question it asked the main process from the DNS port (a connected client accepts only that)", async () => {
    for (let i = 0; i < 4; i++) {
      // A name never asked before: not cached in any process, so the reply is built by JavaScript.
      await createRecord(p, zoneId, { type: "A", name: `fresh-miss${i}`, content: "10.9.3.1", ttl: 300 });
      const s = dgram.createSocket("udp4");
      await new Promise<void>((resolve) => s.connect(port, "127.0.0.1", resolve));
      const reply = await new Promise<Buffer>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no reply on the connected socket")), 10_000);
        s.once("message", (m) => {
          clearTimeout(timer);
          resolve(m);
        });
        s.send(encodeQuery(`fresh-miss${i}.${Z}`, "A"));
      });
      s.close();
      assert.deepEqual(addresses(packet.decode(reply) as DnsResponse), ["10.9.3.1"]);
    }
  });

  it("answers a change made through the API from every process as soon as the call returns", async () => {
    const pids = answeringPids(p.process.pid!);
    const rec = await createRecord(p, zoneId, { type: "A", name: "changing", content: "10.9.1.1", ttl: 300 });
    // Every process caches the old answer first.
    const fromOf = new Map<number, number>();
    for (const pid of pids) fromOf.set(pid, await clientPortAnsweredBy(port, pids, pid));
    for (const pid of pids) assert.deepEqual(addresses(await udpQuery(port, `changing.${Z}`, "A", { from: fromOf.get(pid) })), ["10.9.1.1"]);

    const patched = await p.api("PATCH", `/zones/${zoneId}/dns_records/${rec.id}`, { content: "10.9.1.2" });
    assert.equal(patched.status, 200);
    for (const pid of pids) assert.deepEqual(addresses(await udpQuery(port, `changing.${Z}`, "A", { from: fromOf.get(pid) })), ["10.9.1.2"], `process ${pid}`);

    // Many queries from fresh sockets with every process running: whichever takes one, the answer is new.
    const renamed = await p.api("PATCH", `/zones/${zoneId}/dns_records/${rec.id}`, { content: "10.9.1.3" });
    assert.equal(renamed.status, 200);
    const answers = await Promise.all(Array.from({ length: 200 }, () => udpQuery(port, `changing.${Z}`, "A")));
    assert.deepEqual(new Set(answers.map((a) => addresses(a).join())), new Set(["10.9.1.3"]));

    assert.equal((await p.api("DELETE", `/zones/${zoneId}/dns_records/${rec.id}`)).status, 200);
    for (const pid of pids) assert.equal(rcodeOf(await udpQuery(port, `changing.${Z}`, "A", { from: fromOf.get(pid) })), 3, `process ${pid}`);
  });

  it("starts a new process when one is killed, and the new one answers", async () => {
    const { victim, survivor, fresh } = await killOne(p);
    assert.match(p.logs(), new RegExp(`"child_pid":${victim}[^\\n]*"signal":"SIGKILL"[^\\n]*dns answering process exited`));
    const pids = answeringPids(p.process.pid!);
    assert.deepEqual(
      pids,
      [fresh, survivor].sort((a, b) => a - b),
    );
    const from = await clientPortAnsweredBy(port, pids, fresh);
    assert.deepEqual(addresses(await udpQuery(port, `www.${Z}`, "A", { from })), ["10.9.0.1"]);
  });

  it("builds answers ahead for a process started to replace one that died (--dns-prewarm)", async () => {
    const names = Array.from({ length: 30 }, (_, i) => `ahead${i}`);
    const posts = names.map((name, i) => ({ type: "A", name, content: `10.9.2.${i + 1}`, ttl: 300 }));
    assert.equal((await p.api("POST", `/zones/${zoneId}/dns_records/batch`, { posts })).status, 200);
    const { fresh } = await killOne(p);
    // Asked from a port the new process reads, with the main process stopped: a name is answered only from answers built
    // for the new process. Each attempt asks another name (an unanswered one is answered, and cached, once the main
    // process runs again).
    let answered = "";
    const from = await clientPortAnsweredBy(port, answeringPids(p.process.pid!), fresh);
    for (const [i, name] of names.entries()) {
      process.kill(p.process.pid!, "SIGSTOP");
      try {
        const reply = packet.decode(await udpRaw(port, encodeQuery(`${name}.${Z}`, "A"), 1000, from));
        assert.deepEqual(addresses(reply as DnsResponse), [`10.9.2.${i + 1}`]);
        answered = name;
      } catch (err) {
        if (err instanceof assert.AssertionError) throw err;
      } finally {
        process.kill(p.process.pid!, "SIGCONT");
      }
      if (answered) break;
      await new Promise((r) => setTimeout(r, 1000)); // not built yet: let the main process run
    }
    assert.ok(answered, "no name was answered by the new process alone");
  });
});

describe("DNS answering processes stop with the platform", () => {
  it("SIGTERM stops the platform and all its answering processes", async () => {
    const { p, port } = await startDnsPlatform(["--dns-workers", "3"]);
    const pids = answeringPids(p.process.pid!);
    assert.equal(pids.length, 3);
    assert.equal(rcodeOf(await udpQuery(port, "not-ours.example", "A")), 5, "REFUSED for a zone we do not have");
    await p.dispose();
    assert.equal(p.process.exitCode, 0);
    for (const pid of pids) assert.ok(gone(pid), `answering process ${pid} is gone`);
  });

  it("leaves no orphan when the platform is killed outright: the processes exit when their channel closes", async () => {
    const { p } = await startDnsPlatform(["--dns-workers", "2"]);
    const pids = answeringPids(p.process.pid!);
    assert.equal(pids.length, 2);
    p.process.kill("SIGKILL");
    await until("the answering processes exited", () => pids.every(gone));
    if (p.process.exitCode === null && p.process.signalCode === null) await new Promise((r) => p.process.once("exit", r));
    await p.dispose();
    assert.ok(pids.every((pid) => !existsSync(`/proc/${pid}`) || gone(pid)));
  });

  it("reports a UDP port that is taken as a clear error (the answering processes cannot bind it)", async () => {
    const squatter = dgram.createSocket("udp4");
    await new Promise<void>((r) => squatter.bind(0, "127.0.0.1", r));
    const stateDir = mkdtempSync(join(tmpdir(), "edge-dns-taken-"));
    try {
      const port = squatter.address().port;
      const r = await runCli(["serve", "--port", "0", "--dns-port", String(port), "--dns-workers", "2", "--state-dir", stateDir]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, new RegExp(`The DNS port 127\\.0\\.0\\.1:${port} is already in use`));
      assert.doesNotMatch(r.stderr, /This is a bug/);
    } finally {
      squatter.close();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
