#!/usr/bin/env node
// Puts and gets one large object through the v4 API of a real `edgecli serve` and reports throughput and the
// server's resident memory (peak, from /proc). Usage: node bench/r2/big-object.mjs [MiB=1024]
// Needs a build (npx tsc -p .). Not part of the test suite.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { Readable } from "node:stream";
import { request } from "undici";
import { startTestPlatform } from "../../dist/core/testing/platform.js";

const mib = Number(process.argv[2] ?? 1024);
const MiB = 1024 * 1024;
const p = await startTestPlatform();
const rss = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${p.process.pid}/status`, "utf8"))[1]) / 1024;
try {
  await p.api("POST", `/accounts/${p.accountId}/r2/buckets`, { name: "bench" });
  const url = `${p.apiUrl}/accounts/${p.accountId}/r2/buckets/bench/objects/big.bin`;
  const chunk = Buffer.alloc(MiB, 0x5a);
  const want = createHash("md5");
  for (let i = 0; i < mib; i++) want.update(chunk);
  const before = rss("VmRSS");

  let t = performance.now();
  const body = Readable.from(
    (function* () {
      for (let i = 0; i < mib; i++) yield chunk;
    })(),
  );
  const put = await request(url, { method: "PUT", headers: p.headers({ "content-length": String(mib * MiB) }), body });
  const putResult = await put.body.json();
  const putSecs = (performance.now() - t) / 1000;
  if (!putResult.success) throw new Error(JSON.stringify(putResult));
  const afterPut = rss("VmHWM");

  t = performance.now();
  const get = await request(url, { headers: p.headers() });
  const got = createHash("md5");
  for await (const c of get.body) got.update(c);
  const getSecs = (performance.now() - t) / 1000;
  if (got.digest("hex") !== want.digest("hex")) throw new Error("downloaded bytes differ");

  console.log(
    `object ${mib} MiB; server RSS before ${before.toFixed(0)} MiB; peak after put ${afterPut.toFixed(0)} MiB; peak after get ${rss("VmHWM").toFixed(0)} MiB`,
  );
  console.log(`put ${(mib / putSecs).toFixed(0)} MiB/s (${putSecs.toFixed(1)} s); get ${(mib / getSecs).toFixed(0)} MiB/s (${getSecs.toFixed(1)} s)`);
} finally {
  await p.dispose();
}
