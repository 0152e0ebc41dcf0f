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
const from = process.env.LAST_SECONDS ? prof.endTime - Number(process.env.LAST_SECONDS) * 1e6 : -Infinity;
const self = new Map();
let total = 0;
prof.samples.forEach((id, i) => {
  if (times[i] < from) return;
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
