import { execFile } from "node:child_process";
import dgram from "node:dgram";
import { readFileSync, writeFileSync } from "node:fs";
import { get } from "node:https";
import { join } from "node:path";
import * as packet from "dns-packet";
import type { TestPlatform } from "../../core/testing/platform.js";
import { startPebble, type Pebble } from "../../dns/testing/pebble.js";
import { startPlatform } from "./helpers.js";

/**
 * A DNS forwarder for pebble in front of the platform's DNS servers (tests of Custom Domain certificates): a query
 * whose name has a label `refused` gets REFUSED (a challenge that fails); any other goes to every port `targets()`
 * gives, and the first answer holding records is sent back (else the last one): several nodes, asked as a CA asks
 * any of a zone's servers.
 */
export async function startDnsForwarder(targets: () => number[]): Promise<{ port: number; close(): void }> {
  const s = dgram.createSocket("udp4");
  s.on("message", (msg, from) => {
    let refused = false;
    try {
      refused = (packet.decode(msg).questions ?? []).some((q) => q.name.toLowerCase().split(".").includes("refused"));
    } catch {
      return;
    }
    const reply = (bytes: Buffer) => s.send(bytes, from.port, from.address);
    if (refused) {
      const out = Buffer.from(msg);
      out[2] |= 0x80; // QR: a response
      out[3] = (out[3] & 0xf0) | 5; // RCODE 5, REFUSED
      return void reply(out);
    }
    const ports = targets();
    let pending = ports.length;
    let sent = false;
    for (const port of ports) {
      const up = dgram.createSocket("udp4");
      up.on("message", (answer) => {
        up.close();
        pending--;
        // ANCOUNT (bytes 6-7): an answer with records wins; an empty one only when no other is left to come.
        if (!sent && (answer.readUInt16BE(6) > 0 || pending === 0)) {
          sent = true;
          reply(answer);
        }
      });
      up.send(msg, port, "127.0.0.1");
    }
  });
  await new Promise<void>((resolve) => s.bind(0, "127.0.0.1", resolve));
  return { port: s.address().port, close: () => s.close() };
}

/** A PEM over HTTPS (pebble's management interface), trusting `caFile`. */
export function fetchPem(url: string, caFile: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(url, { ca: readFileSync(caFile) }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve(body));
    }).on("error", reject);
  });
}

/** curl over HTTPS to `host` on `port` of loopback (by SNI and Host), trusting `rootFile` only; curl's exit code. */
export function curlTls(host: string, port: number, rootFile: string, path = "/"): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) =>
    execFile(
      "curl",
      ["-sS", "--max-time", "60", "--resolve", `${host}:${port}:127.0.0.1`, "--cacert", rootFile, `https://${host}:${port}${path}`],
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: stdout, err: stderr }),
    ),
  );
}

/** The port of the HTTPS edge a platform reported (`edge_tls` in its endpoints). */
export const tlsPortOf = (endpoints: Record<string, string>) => Number(/:(\d+) /.exec(endpoints.edge_tls ?? "")?.[1]);

/** A platform whose HTTPS port serves certificates ordered from a local pebble, and what the tests of it need. */
export interface AcmePlatform {
  p: TestPlatform;
  pebble: Pebble;
  tlsPort: number;
  /** pebble's root certificate (PEM), for clients that check the chain. */
  rootFile: string;
  dispose(): Promise<void>;
}

/**
 * Starts pebble (validating DNS-01 through a forwarder to the platform's own DNS server, which refuses names with a
 * `refused` label) and a platform ordering from it on an HTTPS port of its own; `args` are more serve options.
 */
export async function startAcmePlatform(dir: string, args: string[] = []): Promise<AcmePlatform> {
  let dnsTarget = 0;
  const forwarder = await startDnsForwarder(() => [dnsTarget]);
  let pebble: Pebble | undefined;
  let p: TestPlatform | undefined;
  const dispose = async () => {
    await p?.dispose();
    pebble?.process.kill("SIGTERM");
    forwarder.close();
  };
  try {
    pebble = await startPebble(dir, `127.0.0.1:${forwarder.port}`);
    p = await startPlatform(["--edge-tls-port", "0", "--acme-directory", pebble.directory, "--acme-ca-file", pebble.serverCaFile, ...args]);
    dnsTarget = Number(p.endpoints.dns_udp.split(":").pop());
    const rootFile = join(dir, "pebble-root.pem");
    writeFileSync(rootFile, await fetchPem(`${pebble.managementUrl}/roots/0`, pebble.serverCaFile));
    return { p, pebble, tlsPort: tlsPortOf(p.endpoints), rootFile, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}
