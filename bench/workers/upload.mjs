// Uploads a one-module worker script through the platform's v4 API (the benches' shared setup step).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { request } from "../../node_modules/undici/index.js";

export const R2_BENCH_BINDING = { type: "r2_bucket", name: "BUCKET", bucket_name: "bench" };

/** The two Workers the edge benches compare paths with: one answering 1 KiB, one doing env.BUCKET.get of 1 KiB ("small"). */
export const EDGE_BENCH_WORKERS = {
  plain: { code: `const body = "x".repeat(1024); export default { async fetch() { return new Response(body); } };`, bindings: [] },
  get: {
    code: `export default { async fetch(req, env) {
  const o = await env.BUCKET.get("small");
  return o ? new Response(o.body) : new Response("missing", { status: 404 });
} };`,
    bindings: [R2_BENCH_BINDING],
  },
};

/** `metadata`: more upload metadata fields, e.g. Durable Object `migrations`. */
export async function uploadWorker(p, name, code, bindings = [R2_BENCH_BINDING], metadata = {}) {
  const form = new FormData();
  form.append("metadata", JSON.stringify({ main_module: "index.js", compatibility_date: "2024-09-01", bindings, ...metadata }));
  form.append("index.js", new Blob([code], { type: "application/javascript+module" }), "index.js");
  const enc = new Response(form);
  const r = await request(`${p.apiUrl}/accounts/${p.accountId}/workers/scripts/${name}`, {
    method: "PUT",
    headers: { ...p.headers(), "content-type": enc.headers.get("content-type") },
    body: Buffer.from(await enc.arrayBuffer()),
  });
  const text = await r.body.text();
  if (r.statusCode !== 200) throw new Error(`upload of ${name} failed: ${text}`);
}

/** The live workerd port and binding header of a script, from its generated config and the platform log. */
export function scriptInfo(p, name) {
  const live = p
    .logs()
    .split("\n")
    .filter((l) => l.includes('"worker version live"') && l.includes(`"script":"${name}"`))
    .map((l) => JSON.parse(l))
    .pop();
  const dir = join(p.stateDir, "workers-run", name);
  const gen = readdirSync(dir).sort().pop();
  const config = readFileSync(join(dir, gen, "config.capnp"), "utf8");
  const m = config.match(/address = "([^"]+)", http = \(injectRequestHeaders = \[\(name = "([^"]+)", value = "([^"]+)"/);
  return {
    socket: { socketPath: live.socket },
    pid: live.workerd_pid,
    backend: m && { socket: { socketPath: m[1].replace(/^unix:/, "") }, header: m[2], value: m[3] },
  };
}
