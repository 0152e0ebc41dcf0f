#!/usr/bin/env node
// Requests per second of the R2 binding backend alone (what workerd calls for env.BUCKET.get), over loopback
// HTTP with keep-alive: sequential, then 8 concurrent clients. Usage: node bench/r2/binding.mjs [seconds=5]
// Needs a build (npx tsc -p .). Not part of the test suite.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { FileContentStore } from "../../dist/core/content/file-store.js";
import { openDatabase } from "../../dist/core/db/sqlite.js";
import { createR2BindingHandler } from "../../dist/r2/binding.js";
import { r2Migrations } from "../../dist/r2/sqlite-migrations.js";
import { SqliteR2Store } from "../../dist/r2/sqlite-store.js";

const seconds = Number(process.argv[2] ?? 5);
const dir = mkdtempSync(join(tmpdir(), "r2-bench-"));
const db = openDatabase(join(dir, "r2.sqlite"), r2Migrations);
const store = new SqliteR2Store(db, new FileContentStore(join(dir, "content")));
await store.createBucket("acc", "bench");
await store.put({ accountId: "acc", bucketName: "bench" }, "small.txt", Buffer.from("hello, small object".repeat(10)), {
  httpMetadata: { contentType: "text/plain" },
});
const handler = createR2BindingHandler(store);
const server = createServer((req, res) => handler({ accountId: "acc", bucketName: "bench" }, req, res));
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${server.address().port}/`;
const op = JSON.stringify({ version: 1, method: "get", object: "small.txt" });

async function run(clients) {
  const agent = new Agent({ connections: clients, pipelining: 1 });
  const lat = [];
  const cpu0 = process.cpuUsage();
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        const res = await request(url, { dispatcher: agent, headers: { "cf-r2-request": op } });
        await res.body.arrayBuffer();
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
        lat.push(performance.now() - t);
      }
    }),
  );
  await agent.close();
  lat.sort((a, b) => a - b);
  const pct = (q) => lat[Math.min(lat.length - 1, Math.floor(q * lat.length))].toFixed(2);
  const cpu = process.cpuUsage(cpu0);
  // CPU per request (client and server together, both in this process) is steadier than req/s on a busy machine.
  const cpuUs = (cpu.user + cpu.system) / lat.length;
  console.log(`${clients} client(s): ${(lat.length / seconds).toFixed(0)} req/s, p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, ${cpuUs.toFixed(0)} µs CPU/req`);
}

console.log(
  `load average ${(await import("node:os"))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}, ${(await import("node:os")).cpus().length} cpus`,
);
await run(1);
await run(8);
server.close();
db.close();
rmSync(dir, { recursive: true, force: true });
