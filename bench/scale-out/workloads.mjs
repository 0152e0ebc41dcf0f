// The scale-out mix, shared by run.mjs (throughput) and round-trips.mjs (what one request costs): KV get/put and
// R2 small-object GET/PUT through the v4 API, a DNS record list, and a worker that reads a small R2 object through
// its binding. Each workload is one kind of request; `prepare` makes what they need on a platform.
import { request } from "undici";

export const KEYS = 200;
export const DNS_RECORDS = 50;
const WORKER = "bench-r2";

/** A worker that answers with the bytes of the object its path names (`/k17`), read through its R2 binding. */
const R2_WORKER = `export default { async fetch(req, env) {
  const o = await env.BUCKET.get(new URL(req.url).pathname.slice(1));
  return o ? new Response(o.body) : new Response("missing", { status: 404 });
} };`;

export const WORKLOADS = [
  { name: "KV read", method: "GET", path: (c, t, key) => kvPath(c, t, key) },
  { name: "KV write", method: "PUT", path: (c, t, key) => kvPath(c, t, key) },
  { name: "R2 GET (small)", method: "GET", path: (c, _t, key) => r2Path(c, key) },
  { name: "R2 PUT (small)", method: "PUT", path: (c, _t, key) => r2Path(c, key) },
  { name: "DNS record list", method: "GET", path: (_c, t) => `/client/v4/zones/${t.zoneId}/dns_records?per_page=${DNS_RECORDS}` },
  { name: "Worker R2 get", method: "GET", worker: true, path: (_c, _t, key) => `/${key}` },
];

const kvPath = (c, t, key) => `/client/v4/accounts/${c.accountId}/storage/kv/namespaces/${t.namespaceId}/values/${key}`;
const r2Path = (c, key) => `/client/v4/accounts/${c.accountId}/r2/buckets/bench/objects/${key}`;

/** Request `i` of `workload` against `node`: undici options (the worker is reached by its host name). */
export function requestOf(workload, node, creds, target, i, value) {
  const key = `k${i % KEYS}`;
  const put = workload.method === "PUT";
  const headers = workload.worker ? { host: `${WORKER}.workers.localhost` } : node.headers(put ? { "content-type": "application/octet-stream" } : {});
  return { url: node.url + workload.path(creds, target, key), method: workload.method, headers, body: put ? value : undefined };
}

/** Sends one request; resolves to its status (the body is read whole). */
export async function send(workload, node, creds, target, i, value, dispatcher) {
  const { url, ...opts } = requestOf(workload, node, creds, target, i, value);
  const res = await request(url, { ...opts, dispatcher });
  await res.body.arrayBuffer();
  return res.statusCode;
}

async function ok(what, res) {
  if (res.status !== 200) throw new Error(`${what} failed: ${JSON.stringify(res.body)}`);
  return res.body.result;
}

/**
 * Makes on the platform behind `nodes` what every workload reads: a namespace and a bucket holding KEYS values of
 * `value`, a zone with DNS_RECORDS records, the R2-reading worker (answering on every node). Returns the target ids.
 */
export async function prepare(nodes, creds, value) {
  const [node] = nodes;
  const ns = await ok("namespace", await node.api("POST", `/accounts/${creds.accountId}/storage/kv/namespaces`, { title: "bench" }));
  await ok("bucket", await node.api("POST", `/accounts/${creds.accountId}/r2/buckets`, { name: "bench" }));
  const zone = await ok("zone", await node.api("POST", "/zones", { name: "bench-scale.example", account: { id: creds.accountId } }));
  for (let i = 0; i < DNS_RECORDS; i++) {
    await ok(
      "record",
      await node.api("POST", `/zones/${zone.id}/dns_records`, { type: "A", name: `h${i}.bench-scale.example`, content: `198.51.100.${i + 1}`, ttl: 300 }),
    );
  }
  const target = { namespaceId: ns.id, zoneId: zone.id };
  for (let i = 0; i < KEYS; i++) {
    for (const w of WORKLOADS.filter((w) => w.method === "PUT")) {
      const status = await send(w, node, creds, target, i, value);
      if (status !== 200) throw new Error(`seeding ${w.name} answered ${status}`);
    }
  }
  await deployWorker(node, creds);
  // A deploy reaches the other nodes through the bus; wait until each serves it.
  const worker = WORKLOADS.find((w) => w.worker);
  for (const n of nodes) {
    for (const deadline = Date.now() + 60_000; (await send(worker, n, creds, target, 0, value)) !== 200;) {
      if (Date.now() > deadline) throw new Error(`the worker did not answer on ${n.url}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return target;
}

async function deployWorker(node, creds) {
  const form = new FormData();
  const bindings = [{ type: "r2_bucket", name: "BUCKET", bucket_name: "bench" }];
  form.append("metadata", JSON.stringify({ main_module: "index.js", compatibility_date: "2024-09-01", bindings }));
  form.append("index.js", new Blob([R2_WORKER], { type: "application/javascript+module" }), "index.js");
  const enc = new Response(form);
  const res = await request(`${node.apiUrl}/accounts/${creds.accountId}/workers/scripts/${WORKER}`, {
    method: "PUT",
    headers: node.headers({ "content-type": enc.headers.get("content-type") }),
    body: Buffer.from(await enc.arrayBuffer()),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`deploying the worker failed: ${text}`);
}
