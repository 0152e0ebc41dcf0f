// CPU profiles of the floor (bare-proxy.mjs) and the gateway under the same wrk load, to compare where each spends
// its main thread per request. Both run with `--cpu-prof`; they take turns (floor, gateway, floor, gateway, ...)
// so a shared machine's drift hits both. Prints each profile's busy µs per request by package and the top frames
// (profile-top.mjs does the reading), and leaves the profiles in OUT. The gateway's figures include its start (module
// loading, a few µs a request over 100,000 requests): read its "compile" and "(program)" rows with that in mind.
// Usage: npm run build && cd bench/gateway && node profile-pair.mjs
// Environment: CLIENTS (8), SECONDS (10 per turn), TURNS (2), OUT (a new temporary directory).
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { startPlatform } from "./platform.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = fileURLToPath(new URL("../../", import.meta.url));
const CLIENTS = Number(process.env.CLIENTS ?? 8);
const SECONDS = Number(process.env.SECONDS ?? 10);
const TURNS = Number(process.env.TURNS ?? 2);
const OUT = process.env.OUT ?? mkdtempSync(`${tmpdir()}/gateway-profiles-`);
mkdirSync(OUT, { recursive: true });
const children = [];
process.on("exit", () => children.forEach((c) => c.kill("SIGKILL")));

const firstPort = (child) =>
  new Promise((resolve, reject) => {
    let buf = "";
    child.stdout.on("data", (d) => {
      buf += d;
      const m = /^(\d+)\n/.exec(buf);
      if (m) resolve(Number(m[1]));
    });
    child.on("exit", (code) => reject(new Error(`exited ${code}: ${buf}`)));
  });
const start = (args) => {
  const c = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  children.push(c);
  return c;
};

const mock = start([`${here}mock-upstream.mjs`]);
const upstream = `http://127.0.0.1:${await firstPort(mock)}/v1`;
const bare = start([`--cpu-prof`, `--cpu-prof-dir=${OUT}/floor`, `${here}bare-proxy.mjs`, upstream]);
const barePort = await firstPort(bare);
const { p, runToken } = await startPlatform(root, upstream, { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${OUT}/gateway`] });
// Killed with the others if this script fails: startPlatform's process is not one of `children`.
children.push(p.process);

const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello" }] });
const base = { "content-type": "application/json", authorization: "Bearer sk-bench" };
const targets = {
  floor: { url: `http://127.0.0.1:${barePort}/`, headers: base },
  gateway: { url: `${p.url}/v1/${p.accountId}/bench/openai/chat/completions`, headers: { ...base, "gw-aig-authorization": `Bearer ${runToken}` } },
};
const lua = (s) => `[==[${s}]==]`;
for (const [name, t] of Object.entries(targets)) {
  const lines = ['wrk.method = "POST"', `wrk.body = ${lua(body)}`];
  for (const [k, v] of Object.entries(t.headers)) lines.push(`wrk.headers[ ${lua(k)} ] = ${lua(v)}`);
  writeFileSync(`${OUT}/${name}.lua`, lines.join("\n") + "\n");
}
const requests = { floor: 0, gateway: 0 };
const wrk = (name, seconds) => {
  const out = execFileSync("wrk", ["-t1", `-c${CLIENTS}`, `-d${seconds}s`, "-s", `${OUT}/${name}.lua`, targets[name].url], { encoding: "utf8" });
  return Number(/(\d+) requests in/.exec(out)[1]);
};
for (const name of Object.keys(targets)) requests[name] += wrk(name, 3); // warm-up: in the profile, so counted
for (let turn = 0; turn < TURNS; turn++)
  for (const name of Object.keys(targets)) {
    const n = wrk(name, SECONDS);
    requests[name] += n;
    console.log(`turn ${turn + 1} ${name}: ${Math.round(n / SECONDS)} req/s`);
  }

bare.kill("SIGINT");
await new Promise((r) => bare.once("exit", r));
await p.stop();
for (const name of Object.keys(targets)) {
  const dir = `${OUT}/${name}`;
  // The platform writes one profile per thread; the main thread's is the largest.
  const files = readdirSync(dir).map((f) => `${dir}/${f}`);
  const sizes = files.map((f) => [f, Number(execFileSync("stat", ["-c%s", f], { encoding: "utf8" }))]).sort((a, b) => b[1] - a[1]);
  console.log(`\n=== ${name}: ${requests[name]} requests counted; main-thread profile ${sizes[0][0]}`);
  console.log(
    execFileSync(process.execPath, [`${here}profile-top.mjs`, sizes[0][0], "30"], {
      encoding: "utf8",
      env: { ...process.env, PER_REQUEST: String(requests[name]) },
    }),
  );
}
