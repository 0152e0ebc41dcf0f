import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough, type Readable } from "node:stream";
import { test } from "node:test";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { Fill } from "./fill.js";

const CHUNK = 64 * 1024;

async function collect(r: Readable): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const chunk of r) out.push(chunk as Buffer);
  return out;
}

test("a reader keeping up with the origin is handed the origin's chunks themselves; readers behind or in a range read the file; all get every byte", async () => {
  await withTempDir("edge-fill-", async (dir) => {
    const temp = join(dir, "body");
    const fill = new Fill(temp, 64 * 1024 * 1024, () => true);
    const origin = new PassThrough({ highWaterMark: CHUNK });
    const chunks = Array.from({ length: 40 }, () => randomBytes(CHUNK));
    const whole = Buffer.concat(chunks);
    const running = fill.run(origin);
    const first = collect(fill.reader());
    // The origin sends a chunk once the first reader has what was sent before (a client keeping up).
    for (const chunk of chunks) {
      origin.write(chunk);
      await new Promise<void>((resolve) => {
        const check = () => (fill.written >= chunks.indexOf(chunk) * CHUNK + CHUNK ? resolve() : fill.once("progress", check));
        check();
      });
    }
    // Readers that come late: from the start (far behind: the file), and a range across the recent chunks' start.
    const late = collect(fill.reader());
    const rangeStart = 30 * CHUNK - 1000;
    const range = collect(fill.reader(rangeStart, 35 * CHUNK + 99));
    origin.end();
    await running;
    const got = await first;
    assert.ok(Buffer.concat(got).equals(whole), "the first reader got every byte in order");
    // Without the recent chunks every reader's chunk was a fresh buffer read back from the file.
    const shared = got.filter((c) => chunks.some((o) => o.buffer === c.buffer)).length;
    assert.ok(shared >= got.length / 2, `${shared} of ${got.length} chunks handed over without a copy`);
    assert.ok(Buffer.concat(await late).equals(whole), "a reader from the start, far behind, got every byte");
    assert.ok(Buffer.concat(await range).equals(whole.subarray(rangeStart, 35 * CHUNK + 100)), "a range read got its bytes");
    assert.ok(readFileSync(temp).equals(whole), "the file holds the whole body");
  });
});
