import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { TestPlatform } from "../../core/testing/platform.js";
import { startDnsPlatform, udpQuery } from "../testing/helpers.js";

describe("edgecli dns commands against a running platform", () => {
  let p: TestPlatform;
  let port: number;
  before(async () => ({ p, port } = await startDnsPlatform()));
  after(() => p?.dispose());

  it("creates a zone and records, lists, exports, imports and deletes", async () => {
    const created = await p.cli(["dns", "zone", "create", "cli.example"]);
    assert.equal(created.code, 0, created.stderr);
    assert.match(
      created.stdout,
      /Created zone cli\.example with id [0-9a-f]{32}\.\nPoint its NS records at: ns1\.edge-platform\.test, ns2\.edge-platform\.test/,
    );
    const [zone] = JSON.parse((await p.cli(["dns", "zone", "list"])).stdout);

    const rec = await p.cli(["dns", "record", "create", "cli.example", "--type", "A", "--name", "www", "--content", "203.0.113.77", "--ttl", "120"]);
    assert.equal(rec.code, 0, rec.stderr);
    const id = JSON.parse(rec.stdout).id;
    const srv = await p.cli([
      "dns",
      "record",
      "create",
      zone.id,
      "--type",
      "SRV",
      "--name",
      "_sip._tcp",
      "--data",
      '{"priority":1,"weight":2,"port":5060,"target":"sip.cli.example"}',
    ]);
    assert.equal(srv.code, 0, srv.stderr);
    assert.deepEqual(
      (await udpQuery(port, "www.cli.example", "A")).answers?.map((a: any) => a.data),
      ["203.0.113.77"],
    );

    const list = await p.cli(["dns", "record", "list", "cli.example", "--type", "A"]);
    assert.deepEqual(
      JSON.parse(list.stdout).map((r: any) => r.name),
      ["www.cli.example"],
    );

    const exported = await p.cli(["dns", "export", "cli.example"]);
    assert.match(exported.stdout, /^www\.cli\.example\.\t120\tIN\tA\t203\.0\.113\.77$/m);
    const imported = await p.cli(["dns", "import", "cli.example", "-"], { input: "mail 300 IN MX 10 mx.cli.example.\nwww 120 IN A 203.0.113.77\n" });
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /Imported 1 of 2 records into cli\.example/);

    assert.equal((await p.cli(["dns", "record", "delete", "cli.example", id])).code, 0);
    assert.equal(((await udpQuery(port, "www.cli.example", "A")).flags ?? 0) & 0xf, 3);
    const zones = JSON.parse((await p.cli(["dns", "zone", "list"])).stdout);
    assert.deepEqual(
      zones.map((z: any) => z.name),
      ["cli.example"],
    );
    assert.equal((await p.cli(["dns", "zone", "delete", "cli.example", "--yes"])).code, 0);
    assert.deepEqual(JSON.parse((await p.cli(["dns", "zone", "list"])).stdout), []);
  });

  it("reports bad input on stderr with exit code 1", async () => {
    await p.cli(["dns", "zone", "create", "errors.example"]);
    const bad = await p.cli(["dns", "record", "create", "errors.example", "--type", "A", "--name", "x", "--content", "999.1.1.1"]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /valid IPv4 address.*9005/s);
    const usage = await p.cli(["dns", "record", "create", "errors.example", "--name", "x", "--content", "1.2.3.4"]);
    assert.equal(usage.code, 1);
    assert.match(usage.stderr, /--type and --name are required/);
    const missing = await p.cli(["dns", "export", "nope.example"]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no zone nope\.example/);
  });
});
