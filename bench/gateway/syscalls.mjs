// System calls per request of the floor (bare-proxy.mjs) and of the gateway (authentication and logs on), counted
// with `strace -c -f` on each serving process while autocannon sends AMOUNT requests with 8 clients. Unlike
// timings, the counts do not depend on how busy the machine is. Usage: npm run build && node syscalls.mjs
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { startPlatform } from "./platform.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = fileURLToPath(new URL("../../", import.meta.url));
const AMOUNT = Number(process.env.AMOUNT ?? 5000);
const children = [];
process.on("exit", () => children.forEach((c) => c.kill()));
const portOf = (child) =>
  new Promise((resolve) => {
    let buf = "";
    child.stdout.on("data", (d) => {
      buf += d;
      const m = /^(\d+)\n/.exec(buf);
      if (m) resolve(Number(m[1]));
    });
  });
const start = (script, ...args) => {
  const c = spawn(process.execPath, [`${here}${script}`, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(c);
  return c;
};
const mock = start("mock-upstream.mjs");
const upstream = `http://127.0.0.1:${await portOf(mock)}/v1`;
const bare = start("bare-proxy.mjs", upstream);
const barePort = await portOf(bare);
const { p, runToken: token } = await startPlatform(root, upstream);
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello" }] });
const base = { "content-type": "application/json", authorization: "Bearer sk-bench" };
const targets = {
  bare_passthrough: { url: `http://127.0.0.1:${barePort}/`, headers: base, pid: bare.pid },
  gateway: {
    url: `${p.url}/v1/${p.accountId}/bench/openai/chat/completions`,
    headers: { ...base, "gw-aig-authorization": `Bearer ${token}` },
    pid: p.process.pid,
  },
};
const load = (t, amount) =>
  new Promise((res, rej) => autocannon({ url: t.url, method: "POST", headers: t.headers, body, connections: 8, amount }, (e, r) => (e ? rej(e) : res(r))));
for (const [name, t] of Object.entries(targets)) {
  await load(t, 2000); // warm-up, and every connection open
  const st = spawn("strace", ["-c", "-f", "-p", String(t.pid)], { stdio: ["ignore", "ignore", "pipe"] });
  let out = "";
  st.stderr.on("data", (d) => (out += d));
  await new Promise((r) => setTimeout(r, 1000));
  const r = await load(t, AMOUNT);
  await new Promise((r) => setTimeout(r, 300)); // the log queue's timer
  st.kill("SIGINT");
  await new Promise((r) => st.on("exit", r));
  console.log(`\n${name}: ${r.requests.total} requests (${r.non2xx} not 2xx); system calls per request:`);
  for (const line of out.split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f.length >= 5 && /^\d/.test(f[0]) && Number(f[3]) > 0) console.log(`  ${(Number(f[3]) / r.requests.total).toFixed(2).padStart(6)} ${f[f.length - 1]}`);
  }
}
await p.dispose();
process.exit(0);
