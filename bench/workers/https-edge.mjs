// HTTPS edge benchmark: one Custom Domain whose certificate the platform orders from pebble (validated through our
// DNS server), then the same Worker asked over the plain edge port and over the HTTPS port (keep-alive, by SNI),
// in turn. Reports the time from attach to an active certificate (network and pebble included) and requests a
// second and mean latency on each port. Not part of the suite.
// Run: node bench/workers/https-edge.mjs [seconds per port, default 10] [connections, default 8] after `npm run build`.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, loadavg } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { startPebble } from "../../dist/dns/testing/pebble.js";
import { startPlatform, uploadScript } from "../../dist/workers/testing/helpers.js";
import { fetchPem, startDnsForwarder, tlsPortOf } from "../../dist/workers/testing/tls.js";

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 8);
const dir = mkdtempSync(join(tmpdir(), "edge-tls-bench-"));
let dnsPort = 0;
const forwarder = await startDnsForwarder(() => [dnsPort]);
const pebble = await startPebble(dir, `127.0.0.1:${forwarder.port}`);
const p = await startPlatform(["--edge-tls-port", "0", "--acme-directory", pebble.directory, "--acme-ca-file", pebble.serverCaFile]);
try {
  dnsPort = Number(p.endpoints.dns_udp.split(":").pop());
  const rootFile = join(dir, "root.pem");
  writeFileSync(rootFile, await fetchPem(`${pebble.managementUrl}/roots/0`, pebble.serverCaFile));
  await p.api("POST", "/zones", { name: "bench.example", account: { id: p.accountId } });
  await uploadScript(p, "bench-app", `export default { fetch: () => new Response("ok") };`);
  const host = "shop.bench.example";
  const attachedAt = performance.now();
  const d = await p.api("PUT", `/accounts/${p.accountId}/workers/domains`, { hostname: host, service: "bench-app" });
  for (;;) {
    const state = (await p.api("GET", `/accounts/${p.accountId}/workers/domains/${d.body.result.id}`)).body.result.certificate;
    if (state.status === "active") break;
    if (state.status === "failed") throw new Error(JSON.stringify(state));
    await new Promise((r) => setTimeout(r, 100));
  }
  const orderSeconds = (performance.now() - attachedAt) / 1000;

  const run = async (origin, dispatcher) => {
    const end = performance.now() + seconds * 1000;
    let n = 0;
    let latency = 0;
    let closed = 0;
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (performance.now() < end) {
          const t0 = performance.now();
          const res = await request(`${origin}/`, { headers: { host }, dispatcher });
          await res.body.text();
          if (res.headers.connection === "close") closed++;
          latency += performance.now() - t0;
          n++;
        }
      }),
    );
    await dispatcher.close();
    // closedByServer: answers that ended their connection (0: every request after the first reused it).
    return { rps: Math.round(n / seconds), meanMs: Number((latency / n).toFixed(2)), closedByServer: closed };
  };
  const plainPort = new URL(p.url).port;
  const tlsPort = tlsPortOf(p.endpoints);
  const ca = readFileSync(rootFile);
  const tlsAgent = () => new Agent({ connections, connect: { ca, servername: host } });
  await run(`http://127.0.0.1:${plainPort}`, new Agent({ connections })); // warm-up
  const plain = await run(`http://127.0.0.1:${plainPort}`, new Agent({ connections }));
  const https = await run(`https://127.0.0.1:${tlsPort}`, tlsAgent());
  console.log(
    JSON.stringify({ orderSeconds: Number(orderSeconds.toFixed(1)), seconds, connections, plain, https, loadavg: loadavg().map((l) => l.toFixed(1)) }),
  );
} finally {
  await p.dispose();
  pebble.process.kill("SIGTERM");
  forwarder.close();
  rmSync(dir, { recursive: true, force: true });
}
