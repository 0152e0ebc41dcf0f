import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import * as packet from "dns-packet";
import type { TestPlatform } from "../../core/testing/platform.js";
import { rcodeOf, startDnsPlatform, udpAsk } from "../testing/helpers.js";
import { until } from "../testing/knot.js";

let p: TestPlatform;
let port: number;
before(async () => {
  ({ p, port } = await startDnsPlatform());
});
after(async () => {
  await p?.dispose();
});

const notify = (zone: string, id: number) =>
  packet.encode({ id, type: "query", flags: (4 << 11) | (1 << 10), questions: [{ name: zone, type: "SOA", class: "IN" }] } as packet.Packet);

test("NOTIFYs from anyone for zones that are not secondary zones here are refused, and cannot flood the log", async () => {
  // UDP sources are free to forge: a flood of NOTIFYs must not be a line of log each.
  const sent = 200;
  for (let i = 0; i < sent; i++) assert.equal(rcodeOf(packet.decode(await udpAsk(port, notify(`n${i}.example`, i)))), 5, "REFUSED");
  // Fastify logs each request's URL after everything logged before it: once the marker is in, so is every refusal.
  await p.api("GET", "/zones?name=notify-flood-marker.example");
  await until(async () => p.logs().includes("notify-flood-marker"), "the marker request in the log");
  const lines = p
    .logs()
    .split("\n")
    .filter((l) => l.includes("NOTIFY ignored"));
  assert.ok(lines.length >= 1, "a refused NOTIFY is logged");
  assert.ok(lines.length <= 2, `${lines.length} log lines for ${sent} refused NOTIFYs`);
  assert.match(lines[0]!, /"refused":1\b/, "a line says how many were refused since the last");
});
