import dgram from "node:dgram";
import net from "node:net";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { randomBytes, randomInt } from "node:crypto";
import * as packet from "dns-packet";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";

export type DnsResponse = ReturnType<typeof packet.decode>;

/** A platform with the DNS server on a free port, plus the port. */
export async function startDnsPlatform(args: string[] = [], stateDir?: string, env?: NodeJS.ProcessEnv): Promise<{ p: TestPlatform; port: number }> {
  // Knot, the tests' primary and secondary, runs on loopback, and peers that are never reached use the documentation
  // range: neither is an address tenants' transfer peers may have by default.
  const peerAllow = ["--dns-peer-allow", "127.0.0.0/8", "--dns-peer-allow", "192.0.2.0/24"];
  const p = await startTestPlatform({ args: ["--dns-port", "0", ...peerAllow, ...args], stateDir, env });
  const port = Number(p.endpoints.dns_udp.split(":").pop());
  if (!(port > 0) || p.endpoints.dns_tcp !== p.endpoints.dns_udp) throw new Error(`bad DNS endpoints ${JSON.stringify(p.endpoints)}`);
  return { p, port };
}

/** Creates a zone through the API and returns its id. */
export async function createZone(p: TestPlatform, name: string): Promise<string> {
  const r = await p.api("POST", "/zones", { name, account: { id: p.accountId } });
  if (r.status !== 200) throw new Error(`zone ${name}: ${JSON.stringify(r.body)}`);
  return r.body.result.id as string;
}

export async function createRecord(p: TestPlatform, zoneId: string, body: Record<string, unknown>): Promise<any> {
  const r = await p.api("POST", `/zones/${zoneId}/dns_records`, body);
  if (r.status !== 200) throw new Error(`record ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
  return r.body.result;
}

/** A query; `edns` adds an OPT with that UDP size, `dnssecOk` sets its DO bit (signed answers). */
export function encodeQuery(name: string, type: string, opts: { edns?: number; id?: number; dnssecOk?: boolean } = {}): Buffer {
  return packet.encode({
    type: "query",
    id: opts.id ?? Math.floor(Math.random() * 65536),
    flags: packet.RECURSION_DESIRED,
    questions: [{ type: type as packet.RecordType, name, class: "IN" }],
    additionals: opts.edns ? [{ type: "OPT", name: ".", udpPayloadSize: opts.edns, flags: opts.dnssecOk ? packet.DNSSEC_OK : 0 } as packet.Answer] : [],
  });
}

/** Sends raw bytes over UDP and returns the raw reply (rejects after 2 s without one). */
export function udpRaw(port: number, msg: Buffer, timeoutMs = 2000, from?: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = clientSocket(from);
    const timer = setTimeout(() => {
      s.close();
      reject(new Error("no UDP reply"));
    }, timeoutMs);
    s.on("message", (m) => {
      clearTimeout(timer);
      s.close();
      resolve(m);
    });
    s.send(msg, port, "127.0.0.1");
  });
}

/**
 * A UDP client socket on loopback, on local port `from` when given: the DNS server's answering processes each have a
 * socket of their own on the DNS port (SO_REUSEPORT), and the kernel hands a client's queries to one of them by the
 * client's address and port, so queries from one port all reach the same process (clientPortOf in udp/answering-processes.test.ts).
 */
export function clientSocket(from?: number): dgram.Socket {
  const s = dgram.createSocket("udp4");
  if (from !== undefined) s.bind(from, "127.0.0.1");
  return s;
}

/**
 * Asks as a resolver does: the query again from the same socket when no reply came, waiting longer each time
 * (1, 2, then 4 s), so a datagram lost on a busy machine costs a retry, not the test; rejects after that (a hang guard).
 * `from`: the client's local port (see clientSocket).
 */
export function udpAsk(port: number, msg: Buffer, from?: number): Promise<Buffer> {
  const waits = [1000, 2000, 4000];
  return new Promise((resolve, reject) => {
    const s = clientSocket(from);
    let timer: NodeJS.Timeout | undefined;
    const attempt = (n: number) => {
      if (n === waits.length) {
        s.close();
        return reject(new Error(`no UDP reply after ${n} attempts`));
      }
      s.send(msg, port, "127.0.0.1");
      timer = setTimeout(() => attempt(n + 1), waits[n]);
    };
    s.on("message", (m) => {
      clearTimeout(timer);
      s.close();
      resolve(m);
    });
    attempt(0);
  });
}

export async function udpQuery(port: number, name: string, type: string, opts: { edns?: number; from?: number } = {}): Promise<DnsResponse> {
  return packet.decode(await udpAsk(port, encodeQuery(name, type, opts), opts.from));
}

/**
 * One client sends `garbage` random datagrams (1-600 bytes) as fast as it can, with the valid `queries` spread
 * evenly among them. Returns the replies to the valid queries that came while the flood ran or within a second
 * after (undefined where none did), and how many replies the garbage got.
 */
export async function garbageFlood(port: number, garbage: number, queries: Buffer[]): Promise<{ replies: (Buffer | undefined)[]; garbageReplies: number }> {
  const valid = dgram.createSocket("udp4");
  const junk = dgram.createSocket("udp4");
  const replies: (Buffer | undefined)[] = queries.map(() => undefined);
  let garbageReplies = 0;
  junk.on("message", () => garbageReplies++);
  // The reply's id says which query it answers.
  valid.on("message", (m) => (replies[m.readUInt16BE(0)] ??= m));
  const every = Math.max(1, Math.floor(garbage / queries.length));
  let sent = 0;
  for (const [i, q] of queries.entries()) {
    for (let k = 0; k < every && sent < garbage; k++, sent++) junk.send(randomBytes(1 + randomInt(600)), port, "127.0.0.1");
    const withId = Buffer.from(q);
    withId.writeUInt16BE(i, 0);
    valid.send(withId, port, "127.0.0.1");
    await new Promise((r) => setImmediate(r));
  }
  const until = Date.now() + 1000;
  while (replies.includes(undefined) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  valid.close();
  junk.close();
  return { replies, garbageReplies };
}

/** Sends one query over TCP and collects reply messages until `done` says the answer is complete. */
export function tcpQuery(port: number, msg: Buffer, done: (msgs: DnsResponse[]) => boolean = () => true, localAddress?: string): Promise<DnsResponse[]> {
  return new Promise((resolve, reject) => {
    const out: DnsResponse[] = [];
    const sock = net.connect({ port, host: "127.0.0.1", localAddress });
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`TCP answer incomplete after ${out.length} messages`));
    }, 5000);
    let buf = Buffer.alloc(0);
    sock.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        out.push(packet.decode(buf.subarray(2, 2 + buf.readUInt16BE(0))));
        buf = buf.subarray(2 + buf.readUInt16BE(0));
        if (done(out)) {
          clearTimeout(timer);
          sock.end();
          return resolve(out);
        }
      }
    });
    sock.on("close", () => {
      clearTimeout(timer);
      resolve(out);
    });
    sock.on("error", reject);
    const framed = Buffer.alloc(msg.length + 2);
    framed.writeUInt16BE(msg.length);
    msg.copy(framed, 2);
    sock.write(framed);
  });
}

/** Whether `dig` (Debian dnsutils) is installed; under CI it must be. */
export const digAvailable: Promise<boolean> = new Promise((resolve) => execFile("dig", ["-v"], (err) => resolve(!err)));

/**
 * dig's output for a query to the server on `port`. A try that times out on a loaded machine is retried (up to 3
 * tries of 5 s); dig's note of it (";; communications error … timed out") is left out of the output, which is the answer.
 */
export function dig(port: number, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile("dig", ["@127.0.0.1", "-p", String(port), "+time=5", "+tries=3", ...args], (err, stdout) =>
      err && !stdout ? reject(err) : resolve(stdout.replace(/^;; communications error to .*timed out\n?/gm, "")),
    ),
  );
}

export const rcodeOf = (r: DnsResponse) => (r.flags ?? 0) & 0xf;

/**
 * A local port whose queries the kernel hands to answering process `pid` of a server on `port` (each answering process
 * has its own SO_REUSEPORT socket; the kernel picks one by the client's address and port, and keeps to it while the
 * set of processes stays the same). Found by asking from fresh ports while every other process in `all` is stopped:
 * only `pid` can answer then. A reply that does not come within a second means another port is tried (so a slow
 * machine costs time, never a wrong port). The other processes run again when this returns.
 */
export async function clientPortAnsweredBy(port: number, all: number[], pid: number): Promise<number> {
  const others = all.filter((x) => x !== pid);
  for (const o of others) process.kill(o, "SIGSTOP");
  try {
    // Stopped for sure (state T in /proc) before the first probe, or one of them might still answer it.
    const stopped = (o: number) => readFileSync(`/proc/${o}/stat`, "utf8").split(") ")[1]?.[0] === "T";
    for (let i = 0; i < 500 && !others.every(stopped); i++) await new Promise((r) => setTimeout(r, 20));
    if (!others.every(stopped)) throw new Error("the other answering processes did not stop");
    for (let attempt = 0; attempt < 64; attempt++) {
      const s = clientSocket(0);
      await new Promise<void>((resolve) => s.once("listening", resolve));
      const from = s.address().port;
      const answered = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 1000);
        s.once("message", () => {
          clearTimeout(timer);
          resolve(true);
        });
        s.send(encodeQuery("port-probe.invalid", "A"), port, "127.0.0.1");
      });
      s.close();
      if (answered) return from;
    }
    throw new Error(`no client port reached answering process ${pid}`);
  } finally {
    for (const o of others) process.kill(o, "SIGCONT");
  }
}
