import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as packet from "dns-packet";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createZone, encodeQuery, startDnsPlatform, udpAsk, udpRaw } from "../testing/helpers.js";

const Z = "prewarm.example";
const NAMES = 40;
const addresses = (m: Buffer) => (packet.decode(m).answers ?? []).filter((a) => a.type === "A").map((a: any) => a.data as string);

describe("answers built ahead of any question (--dns-prewarm)", { timeout: 300_000 }, () => {
  let p: TestPlatform, port: number, zoneId: string;
  before(async () => {
    ({ p, port } = await startDnsPlatform(["--dns-workers", "2", "--dns-prewarm", "5000"]));
    zoneId = await createZone(p, Z);
    const posts = Array.from({ length: NAMES }, (_, i) => ({ type: "A", name: `n${i}`, content: `10.7.0.${i + 1}`, ttl: 300 }));
    assert.equal((await p.api("POST", `/zones/${zoneId}/dns_records/batch`, { posts })).status, 200);
  });
  after(() => p?.dispose());

  it("answers names nobody asked for yet from the answering processes alone (the main process stopped)", async () => {
    // Each attempt asks a name not asked before: one unanswered (not built yet) is answered by the main process once it
    // runs again and so says nothing about the others. Built ahead, one is answered with the main process stopped.
    let answered: { name: string; reply: Buffer } | undefined;
    for (let i = 0; i < NAMES && !answered; i++) {
      const name = `n${i}.${Z}`;
      process.kill(p.process.pid!, "SIGSTOP");
      try {
        answered = { name, reply: await udpRaw(port, encodeQuery(name, "A"), 1000) };
      } catch {
        // not built yet: the next name, after this wait
      } finally {
        process.kill(p.process.pid!, "SIGCONT");
      }
      if (answered) assert.deepEqual(addresses(answered.reply), [`10.7.0.${i + 1}`]);
      // Not yet: let the main process run (the answers are built after the zones have been quiet for a moment).
      else await new Promise((r) => setTimeout(r, 1000));
    }
    assert.ok(answered, `none of ${NAMES} names was answered without the main process`);
  });

  it("still answers a change as soon as the API call returns", async () => {
    const rec = (await p.api("GET", `/zones/${zoneId}/dns_records?name=n${NAMES - 1}.${Z}`)).body.result[0];
    assert.equal((await p.api("PATCH", `/zones/${zoneId}/dns_records/${rec.id}`, { content: "10.7.1.1" })).status, 200);
    const answers = await Promise.all(Array.from({ length: 50 }, () => udpAsk(port, encodeQuery(`n${NAMES - 1}.${Z}`, "A"))));
    assert.deepEqual(new Set(answers.map((a) => addresses(a).join())), new Set(["10.7.1.1"]));
  });
});
