import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type * as packet from "dns-packet";
import { ScriptedPrimary } from "../testing/scripted-primary.js";
import { requestXfr, streamXfr, XfrError } from "./xfr-client.js";

const Z = "client.example";
const RECORDS = 5000;

/**
 * The transfer client reads the socket as fast as the primary sends and decodes the messages from a backlog, a
 * bounded number of records per turn: the primary closing right after its last message must not cut the answer
 * short, and one closing before it must.
 */
describe("streamXfr against a primary on TCP", () => {
  const primary = new ScriptedPrimary(Z, 40);
  const ask = { host: "127.0.0.1", port: 0, zone: Z, type: "AXFR" as const };

  before(async () => {
    await primary.start();
    ask.port = primary.port;
    const records = Array.from({ length: RECORDS }, (_, i) => ({ name: `h${i}.${Z}`, type: "A", ttl: 60, class: "IN", data: "192.0.2.1" }) as packet.Answer);
    primary.publish({ serial: 7, records });
  });
  after(() => primary.stop());

  it("hands over every message in order and resolves when the closing SOA arrives, also when the primary closes at once", async () => {
    primary.breakNext("close-after-last");
    let messages = 0;
    let turns = 0;
    const names: string[] = [];
    const ticking = setInterval(() => turns++, 0);
    try {
      await streamXfr(ask, (rrs) => {
        messages++;
        for (const rr of rrs) names.push(rr.name);
      });
    } finally {
      clearInterval(ticking);
    }
    assert.equal(names.length, RECORDS + 2);
    assert.equal(names[1], `h0.${Z}`);
    assert.equal(names[RECORDS], `h${RECORDS - 1}.${Z}`);
    assert.ok(messages > 100, "one call per message");
    assert.ok(turns > 0, "the event loop turned while the answer was decoded");
  });

  it("rejects when the primary closes before the last message, and an error thrown by take ends the transfer with it", async () => {
    primary.breakNext("close-before-last");
    await assert.rejects(requestXfr(ask), (err: Error) => err instanceof XfrError && /closed the connection/.test(err.message));
    let calls = 0;
    const stop = new Error("enough");
    await assert.rejects(
      streamXfr(ask, () => {
        if (++calls === 3) throw stop;
      }),
      (err) => err === stop,
    );
    assert.equal(calls, 3, "not called again after it threw");
  });
});
