// The top frames of a V8 CPU profile (node --cpu-prof): self time by function, and inclusive time of the frames whose
// location matches an optional filter. Usage: node bench/edge/cpu-profile-top.mjs FILE.cpuprofile [N] [filter]
import { readFileSync } from "node:fs";

const [file, n = "40", filter] = process.argv.slice(2);
const prof = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(prof.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of prof.nodes) for (const c of node.children ?? []) parent.set(c, node.id);
// LAST_SECONDS=s: only the samples of the profile's last s seconds (a benchmark's final phase).
const times = [];
let t = prof.startTime;
for (const d of prof.timeDeltas) times.push((t += d));
// BUSIEST_SECONDS=s: only the s seconds with the most non-idle samples (one server's counted run in a bench that
// runs several in turn), and the idle samples left out of the total.
const idleIds = new Set(prof.nodes.filter((node) => node.callFrame.functionName === "(idle)").map((node) => node.id));
let from = process.env.LAST_SECONDS ? prof.endTime - Number(process.env.LAST_SECONDS) * 1e6 : -Infinity;
let to = Infinity;
if (process.env.BUSIEST_SECONDS) {
  const w = Number(process.env.BUSIEST_SECONDS) * 1e6;
  let best = -1;
  for (let i = 0, j = 0, busy = 0; i < times.length; i++) {
    if (!idleIds.has(prof.samples[i])) busy++;
    for (; times[i] - times[j] > w; j++) if (!idleIds.has(prof.samples[j])) busy--;
    if (busy > best) [best, from, to] = [busy, times[j], times[j] + w];
  }
}
const self = new Map();
let total = 0;
prof.samples.forEach((id, i) => {
  if (times[i] < from || times[i] > to || (process.env.BUSIEST_SECONDS && idleIds.has(id))) return;
  total++;
  self.set(id, (self.get(id) ?? 0) + 1);
});
const label = (node) => {
  const f = node.callFrame;
  const url = f.url.replace(/^.*\/(dist|node_modules)\//, "$1/").replace(/^node:/, "");
  return `${f.functionName || "(anonymous)"} ${url}:${f.lineNumber + 1}`;
};
const selfBy = new Map();
const inclusiveBy = new Map();
for (const [id, count] of self) {
  const l = label(byId.get(id));
  selfBy.set(l, (selfBy.get(l) ?? 0) + count);
  // Inclusive: every distinct label on the sample's stack counts once.
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const name = label(byId.get(cur));
    if (seen.has(name)) continue;
    seen.add(name);
    inclusiveBy.set(name, (inclusiveBy.get(name) ?? 0) + count);
  }
}
const pct = (c) => `${((100 * c) / total).toFixed(1).padStart(5)}%`;
console.log(`# ${total} samples; self time:`);
for (const [l, c] of [...selfBy].sort((a, b) => b[1] - a[1]).slice(0, Number(n))) console.log(`${pct(c)}  ${l}`);
console.log(`# inclusive${filter ? ` (matching ${filter})` : ""}:`);
for (const [l, c] of [...inclusiveBy]
  .filter(([l]) => !filter || l.includes(filter))
  .sort((a, b) => b[1] - a[1])
  .slice(0, Number(n)))
  console.log(`${pct(c)}  ${l}`);
// CALLERS=name: the stacks (five frames up) under which a function's self time was spent.
if (process.env.CALLERS) {
  const stacks = new Map();
  for (const [id, count] of self) {
    if (!label(byId.get(id)).startsWith(process.env.CALLERS + " ")) continue;
    const frames = [];
    for (let cur = parent.get(id), i = 0; cur !== undefined && i < 6; cur = parent.get(cur), i++) frames.push(label(byId.get(cur)));
    const key = frames.join(" < ");
    stacks.set(key, (stacks.get(key) ?? 0) + count);
  }
  console.log(`# callers of ${process.env.CALLERS}:`);
  for (const [k, c] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`${pct(c)}  ${k}`);
}

// STAGES=proxy: the samples by stage of a proxied request (the first rule matching the sample's stack), for the edge
// and for the bare undici pass-through alike (bench/edge/proxy.mjs with BENCH_PROFILE_DIR).
if (process.env.STAGES === "proxy") {
  const ours = (f) => f.url.includes("dist/");
  const rules = [
    ["the answer's write to the client (writev)", (s) => s.some((f) => f.fn === "writev")],
    ["the request's write to the origin (write)", (s) => s.some((f) => /^write(Latin1|Utf8)String$|^writeBuffer$/.test(f.fn))],
    ["metrics and analytics counted on close", (s) => s.some((f) => f.fn === "count" && ours(f))],
    ["the answer's head (relayableHeaders / headers object, writeHead)", (s) => s.some((f) => f.fn === "onHeaders" || f.fn === "writeHead")],
    ["undici dispatch of the request (Request, queue)", (s) => s.some((f) => f.fn === "dispatch" && f.url.includes("undici"))],
    ["the platform before the relay (dispatch, origin, cache verdict, headers, ray)", (s) => s.some((f) => ours(f))],
    ["undici: the answer's parse (llhttp) and the rest", (s) => s.some((f) => f.url.includes("undici") || f.url.startsWith("wasm"))],
    ["garbage collection", (s) => s[0].fn === "(garbage collector)"],
    ["Node's HTTP server, streams and timers", (s) => s.some((f) => /_http_|internal\/streams|^node:net$|stream_base|timers|task_queues/.test(f.url))],
    ["other", () => true],
  ];
  const stages = new Map();
  for (const [id, count] of self) {
    const stack = [];
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) stack.push({ fn: byId.get(cur).callFrame.functionName, url: byId.get(cur).callFrame.url });
    const stage = rules.find(([, rule]) => rule(stack))[0];
    stages.set(stage, (stages.get(stage) ?? 0) + count);
  }
  console.log("# by stage of a proxied request:");
  for (const [stage, c] of [...stages].sort((a, b) => b[1] - a[1])) console.log(`${pct(c)}  ${stage}`);
}
