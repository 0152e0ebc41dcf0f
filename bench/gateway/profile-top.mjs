// Top self-time frames of a V8 CPU profile (`node --cpu-prof`), as percentages of the busy (non-idle) time, and
// the total of frames whose script path contains each FILTER (e.g. "ai-gateway/proxy", "core/http").
// Frames of the CLI bundle are named by the module they came from (esbuild's "// dist/..." markers).
// Also the self time by package (node_modules/<pkg>, node:<module>, our dist/<area>, native calls such as writev).
// FROM=<s> TO=<s> keep only the samples between those seconds of the profile (e.g. the 32-client rounds: busy
// time per second is printed with BUCKETS=1 to find them).
// Usage: [FROM=s TO=s] node profile-top.mjs <file.cpuprofile> [TOP=40] [FILTER,...]
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const [file, topArg = "40", filters = "ai-gateway/proxy,core/http,ai-gateway/logs,core/auth,undici,node:"] = process.argv.slice(2);
const prof = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const from = Number(process.env.FROM ?? 0) * 1e6;
const to = Number(process.env.TO ?? Infinity) * 1e6;
const self = new Map();
const perSecond = new Map();
let at = 0;
prof.samples.forEach((id, i) => {
  const dt = prof.timeDeltas[i] ?? 0;
  at += dt;
  if (byId.get(id).callFrame.functionName !== "(idle)") perSecond.set(Math.floor(at / 1e6), (perSecond.get(Math.floor(at / 1e6)) ?? 0) + dt);
  if (at >= from && at <= to) self.set(id, (self.get(id) ?? 0) + dt);
});
if (process.env.BUCKETS === "1") console.log("busy ms per second:", [...perSecond].map(([s, t]) => `${s}:${Math.round(t / 1e3)}`).join(" "));
/** For a line of the CLI bundle, the module it came from; for any other script, its path from dist/ or node_modules/. */
const markers = new Map();
function moduleOf(url, line) {
  if (!url.endsWith("edgecli.bundle.js")) return url.replace(/^file:\/\/.*?\/(dist|node_modules)\//, "$1/");
  let m = markers.get(url);
  if (!m) {
    m = [];
    readFileSync(url.startsWith("file:") ? fileURLToPath(url) : url, "utf8")
      .split("\n")
      .forEach((l, i) => (l.startsWith("// dist/") || l.startsWith("// node_modules/") ? m.push([i, l.slice(3)]) : 0));
    markers.set(url, m);
  }
  let found = "edgecli.bundle.js";
  for (const [i, name] of m) if (i <= line) found = name;
  return found;
}
const frames = new Map();
const packages = new Map();
/** The package a frame belongs to: an npm package, a node: module, an area of ours, or the native call itself. */
function packageOf(cf, where) {
  if (!cf.url) return cf.functionName.startsWith("(") ? cf.functionName : `native ${cf.functionName}`;
  if (where.startsWith("node_modules/"))
    return where
      .split("/")
      .slice(0, where.startsWith("node_modules/@") ? 3 : 2)
      .join("/");
  if (where.startsWith("dist/")) return where.split("/").slice(0, 3).join("/");
  if (cf.url.startsWith("node:")) return cf.url.replace("node:internal/", "node:").split("/")[0];
  return where;
}
let busy = 0;
let idle = 0;
for (const [id, t] of self) {
  const cf = byId.get(id).callFrame;
  if (cf.functionName === "(idle)" || cf.functionName === "(program)") {
    if (cf.functionName === "(idle)") idle += t;
    else busy += t;
    if (cf.functionName === "(idle)") continue;
  } else busy += t;
  const where = cf.url ? moduleOf(cf.url, cf.lineNumber) : "";
  const key = `${cf.functionName || "(anonymous)"}  ${where}${cf.url ? `:${cf.lineNumber + 1}` : ""}`;
  const pkg = packageOf(cf, where);
  packages.set(pkg, (packages.get(pkg) ?? 0) + t);
  frames.set(key, (frames.get(key) ?? 0) + t);
}
/** PER_REQUEST=<n>: also each figure in µs per request, over n requests (the profile's time is in µs). */
const perRequest = Number(process.env.PER_REQUEST ?? 0);
const pct = (t) => ((100 * t) / busy).toFixed(1).padStart(5) + "%" + (perRequest ? ` ${(t / perRequest).toFixed(1).padStart(6)} µs/req` : "");
console.log(
  `busy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s${perRequest ? `, ${(busy / perRequest).toFixed(1)} µs busy per request` : ""}`,
);
for (const [k, t] of [...frames].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg))) console.log(pct(t), k);
console.log("by package:");
for (const [k, t] of [...packages].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(pct(t), k);
for (const f of filters.split(",")) {
  let t = 0;
  for (const [k, v] of frames) if (k.includes(f)) t += v;
  console.log(`${pct(t)} total self time in frames matching "${f}"`);
}
