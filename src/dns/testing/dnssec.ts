import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import * as packet from "dns-packet";
import type { TestPlatform } from "../../core/testing/platform.js";
import { encodeQuery, udpAsk } from "./helpers.js";

/** Whether BIND's `delv` (Debian bind9-dnsutils) is installed; under CI it must be (.ci/run installs it). */
export const delvAvailable: Promise<boolean> = new Promise((resolve) => execFile("delv", ["-v"], (err) => resolve(!err)));

/**
 * Writes `file`: a trust-anchors clause holding the zone's KSK as GET /dnssec shows it (the newest during a KSK
 * rollover), the form delv 9.18 reads with -a. Returns the path.
 */
export async function writeTrustAnchor(p: TestPlatform, zoneId: string, file: string): Promise<string> {
  const r = await p.api("GET", `/zones/${zoneId}/dnssec`);
  const d = r.body.result;
  const zone = d.ds.split(" ")[0];
  writeFileSync(file, `trust-anchors {\n  "${zone}" static-key ${d.flags} 3 ${d.algorithm} "${d.public_key}";\n};\n`);
  return file;
}

/**
 * Asks our server through delv, validating from the zone's own KSK (`+root=<zone>` makes it the only trust anchor):
 * its output, which says "; fully validated" (or "; negative response, fully validated") when every signature on
 * the way checks out, and "resolution failed" otherwise.
 */
export function delv(port: number, anchor: string, zone: string, name: string, type: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      "delv",
      ["@127.0.0.1", "-p", String(port), "-a", anchor, `+root=${zone}`, "+nosplit", "+rtrace", name, type],
      { timeout: 20_000 },
      (err, stdout, stderr) => (err && !stdout && !stderr ? reject(err) : resolve(stdout + stderr)),
    ),
  );
}

/** One query with EDNS, the DO bit set or not, over UDP; the decoded answer. */
export async function askDo(port: number, name: string, type: string, dnssecOk: boolean, udpSize = 4096): Promise<ReturnType<typeof packet.decode>> {
  return packet.decode(await udpAsk(port, encodeQuery(name, type, { edns: udpSize, dnssecOk })));
}
