// How long the platform's event loop is held, seen from outside and from inside, for the benches of bench/dns.
import dgram from "node:dgram";
import * as packet from "dns-packet";

/**
 * Asks `name` (A) over UDP at 127.0.0.1:`port` every 20 ms until stopped. `read()`: the longest wait for an answer
 * since the last `reset()` (a query still waiting counts its wait so far) and how many went unanswered for 2 s.
 */
export function udpProbe(port, name) {
  const s = dgram.createSocket("udp4");
  const sent = new Map();
  let id = 0;
  let worst = 0;
  let lost = 0;
  s.on("message", (m) => {
    const at = sent.get(m.readUInt16BE(0));
    if (at === undefined) return;
    sent.delete(m.readUInt16BE(0));
    worst = Math.max(worst, performance.now() - at);
  });
  const timer = setInterval(() => {
    const now = performance.now();
    for (const [k, at] of sent) if (now - at > 2000) (lost++, sent.delete(k));
    id = (id + 1) & 0xffff;
    sent.set(id, now);
    s.send(packet.encode({ id, type: "query", questions: [{ name, type: "A" }] }), port, "127.0.0.1");
  }, 20);
  return {
    reset: () => ((worst = 0), (lost = 0), sent.clear()),
    read: () => ({ worst_wait_ms: Math.round(Math.max(worst, ...[...sent.values()].map((at) => performance.now() - at))), unanswered: lost }),
    stop: () => (clearInterval(timer), s.close()),
  };
}

/** The samples loop-monitor.mjs printed (`LOOPMON {json}` lines of the server's output) between two times (ms). */
export const loopSamples = (output, from, to) =>
  output
    .split("\n")
    .filter((l) => l.startsWith("LOOPMON "))
    .map((l) => JSON.parse(l.slice(8)))
    .filter((s) => s.t >= from && s.t <= to + 200);
