/**
 * Test-only: KV and R2 writes through the v4 API of platform nodes, each write remembered with its outcome, and
 * read back through any node. The multi-node and fault tests (core/server/cluster.test.ts) use it to tell an
 * acknowledged write (200) from a refused one (503) and to check afterwards that each is all there or not there.
 */
import { createHash, randomBytes } from "node:crypto";
import type { TestPlatform } from "./platform.js";

/** Every request ends by then: a hang guard, never a timing assertion. */
const REQUEST_GUARD_MS = 60_000;

export interface WriteOutcome {
  kind: "kv" | "r2";
  key: string;
  /** The value's MD5: values differ per write, so reading one back says which write it was. */
  md5: string;
  size: number;
  /** The node it went through (its index in the cluster). */
  node: number;
  /** The HTTP status, or the network error when the node went away (a killed node). */
  status: number | string;
  /** The v4 error messages of a refusal. */
  errors: string[];
  /** How long the request took (reported by the fault tests, never asserted). */
  ms: number;
}

export interface ClusterTarget {
  accountId: string;
  namespaceId: string;
  bucket: string;
}

const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");

/** Sets up a KV namespace and an R2 bucket through `node`. */
export async function prepareTarget(node: TestPlatform, name: string): Promise<ClusterTarget> {
  const ns = await node.api("POST", `/accounts/${node.accountId}/storage/kv/namespaces`, { title: name });
  if (ns.status !== 200) throw new Error(`namespace: ${JSON.stringify(ns.body)}`);
  const bucket = await node.api("POST", `/accounts/${node.accountId}/r2/buckets`, { name });
  if (bucket.status !== 200) throw new Error(`bucket: ${JSON.stringify(bucket.body)}`);
  return { accountId: node.accountId, namespaceId: ns.body.result.id, bucket: name };
}

const kvPath = (t: ClusterTarget, key: string) => `/accounts/${t.accountId}/storage/kv/namespaces/${t.namespaceId}/values/${encodeURIComponent(key)}`;
const r2Path = (t: ClusterTarget, key: string) => `/accounts/${t.accountId}/r2/buckets/${t.bucket}/objects/${encodeURIComponent(key)}`;

/** One write of `size` random bytes under `key` through `node`; never throws. */
export async function write(
  nodes: readonly TestPlatform[],
  index: number,
  t: ClusterTarget,
  kind: "kv" | "r2",
  key: string,
  size: number,
): Promise<WriteOutcome> {
  const node = nodes[index]!;
  const value = randomBytes(size);
  const outcome: WriteOutcome = { kind, key, md5: md5(value), size, node: index, status: 0, errors: [], ms: 0 };
  const started = performance.now();
  try {
    const res = await fetch(node.apiUrl + (kind === "kv" ? kvPath(t, key) : r2Path(t, key)), {
      method: "PUT",
      headers: node.headers({ "content-type": "application/octet-stream" }),
      body: value,
      signal: AbortSignal.timeout(REQUEST_GUARD_MS),
    });
    outcome.status = res.status;
    const text = await res.text();
    if (res.status !== 200) {
      try {
        outcome.errors = (JSON.parse(text) as { errors: { message: string }[] }).errors.map((e) => e.message);
      } catch {
        outcome.errors = [text.slice(0, 200)];
      }
    }
  } catch (err) {
    outcome.status = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
  }
  outcome.ms = performance.now() - started;
  return outcome;
}

/** What `node` serves under `key` now: status and the MD5 of the body. */
export async function read(node: TestPlatform, t: ClusterTarget, kind: "kv" | "r2", key: string): Promise<{ status: number; md5?: string; size?: number }> {
  const res = await fetch(node.apiUrl + (kind === "kv" ? kvPath(t, key) : r2Path(t, key)), {
    headers: node.headers(),
    signal: AbortSignal.timeout(REQUEST_GUARD_MS),
  });
  const body = Buffer.from(await res.arrayBuffer());
  return res.status === 200 ? { status: 200, md5: md5(body), size: body.length } : { status: res.status };
}

/**
 * Writers going round the nodes `pick` gives until `stop` is called: `writers` of them at once, KV and R2 in turn,
 * sizes from `sizes` in turn (small ones inline in PostgreSQL, big ones in the object store). Every outcome is kept.
 */
export function startWriters(opts: {
  nodes: readonly TestPlatform[];
  target: ClusterTarget;
  pick: (n: number) => number;
  sizes: readonly number[];
  writers?: number;
  prefix: string;
}): { outcomes: WriteOutcome[]; stop(): Promise<WriteOutcome[]>; acknowledged(): number } {
  const outcomes: WriteOutcome[] = [];
  let running = true;
  let n = 0;
  const loops = Array.from({ length: opts.writers ?? 4 }, async () => {
    while (running) {
      const i = n++;
      const kind = i % 2 === 0 ? "kv" : "r2";
      outcomes.push(await write(opts.nodes, opts.pick(i), opts.target, kind, `${opts.prefix}/${i}`, opts.sizes[i % opts.sizes.length]!));
    }
  });
  return {
    outcomes,
    acknowledged: () => outcomes.filter((o) => o.status === 200).length,
    async stop() {
      running = false;
      await Promise.all(loops);
      return outcomes;
    },
  };
}

/** For t.diagnostic: how many writes, refused, and the slowest refusal (how fast a request fails). */
export function outageSummary(outcomes: readonly WriteOutcome[]): string {
  const refused = outcomes.filter((o) => o.status !== 200);
  const slowest = Math.max(0, ...refused.map((o) => o.ms));
  const sorted = refused.map((o) => o.ms).sort((a, b) => a - b);
  const median = sorted.length ? sorted[Math.floor(sorted.length / 2)]! : 0;
  return `${outcomes.length} writes, ${refused.length} refused (median ${median.toFixed(0)} ms, slowest ${slowest.toFixed(0)} ms)`;
}

/** Polls `check` until it is true; the deadline is a hang guard only. */
export async function until(check: () => Promise<boolean> | boolean, what: string, deadlineMs = 120_000): Promise<void> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > deadlineMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
