import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SHIPPED_PRICES_FILE } from "../config.js";
import { callGateway, chatBody, createGateway, startGatewayPlatform } from "../testing/helpers.js";
import { startMockProvider, type MockProvider } from "../testing/mock-provider.js";
import { PriceTable } from "./prices.js";

describe("AI gateway model prices", () => {
  const dir = mkdtempSync(join(tmpdir(), "aig-prices-"));
  const file = (name: string, content: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
    return path;
  };
  let mock: MockProvider;
  before(async () => {
    mock = await startMockProvider();
  });
  after(async () => {
    await mock?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("ships a table read from data, matched by exact name, then by the longest listed prefix, after a provider/ prefix", () => {
    const t = PriceTable.load(SHIPPED_PRICES_FILE);
    assert.deepEqual(t.of("gpt-4o-mini"), { input: 0.15, output: 0.6 });
    assert.deepEqual(t.of("gpt-4o-mini-2024-07-18"), { input: 0.15, output: 0.6 }, "a dated version, not gpt-4o's price");
    assert.deepEqual(t.of("gpt-4o-2024-08-06"), { input: 2.5, output: 10 });
    assert.deepEqual(t.of("openai/gpt-4.1"), { input: 2, output: 8 });
    assert.equal(t.of("my-local-llama"), undefined);
    assert.equal(t.of("constructor"), undefined, "a model name is never a key of a plain object");
    assert.equal(t.of("__proto__"), undefined);
  });

  it("reads an operator's file over the shipped table: replaces, adds, and removes with null", () => {
    const t = PriceTable.load(
      SHIPPED_PRICES_FILE,
      // Written as text: in an object literal, __proto__ would set the prototype instead of naming a model.
      file(
        "override.json",
        '{"unit": "USD per million tokens", "models": {"gpt-4o-mini": {"input": 1, "output": 2}, "my-llama": {"input": 0, "output": 0.5}, "gpt-4o": null, "__proto__": {"input": 3, "output": 4}}}',
      ),
    );
    assert.deepEqual(t.of("gpt-4o-mini"), { input: 1, output: 2 });
    assert.deepEqual(t.of("my-llama-3"), { input: 0, output: 0.5 });
    assert.equal(t.of("gpt-4o"), undefined, "removed");
    assert.deepEqual(t.of("gpt-4.1"), { input: 2, output: 8 }, "the rest of the shipped table stays");
    assert.deepEqual(t.of("__proto__"), { input: 3, output: 4 }, "a model named __proto__ is a model like any other");
    assert.equal(({} as { input?: number }).input, undefined, "nothing reached Object.prototype");
  });

  it("refuses a malformed price file with a message naming it and what is wrong", () => {
    const load = (content: unknown) => () => PriceTable.load(SHIPPED_PRICES_FILE, file("bad.json", content));
    assert.throws(load("{not json"), /--ai-gateway-prices .*bad\.json: cannot read it as JSON/);
    assert.throws(load([]), /not a JSON object/);
    assert.throws(load({ models: [] }), /"models" must be an object/);
    assert.throws(load({ unit: "USD per token", models: {} }), /unit must be "USD per million tokens"/);
    assert.throws(load({ models: { x: { input: -1, output: 1 } } }), /models\["x"\] must be/);
    assert.throws(load({ models: { x: { input: 1 } } }), /models\["x"\] must be/);
    assert.throws(load({ models: { x: 5 } }), /models\["x"\] must be/);
    assert.throws(() => PriceTable.load(SHIPPED_PRICES_FILE, join(dir, "missing.json")), /missing\.json: cannot read it/);
  });

  it("prices logs with --ai-gateway-prices, and refuses a bad file at start", async () => {
    const prices = file("serve.json", { models: { "gpt-4o-mini": { input: 1000, output: 2000 }, "my-local-llama": { input: 3, output: 5 } } });
    const p = await startGatewayPlatform([`openai=${mock.url}`], { args: ["--ai-gateway-prices", prices] });
    try {
      await createGateway(p, "priced");
      const chat = (model: string) =>
        callGateway(`${p.url}/v1/${p.accountId}/priced/openai/chat/completions`, {
          headers: { authorization: "Bearer sk-x" },
          body: chatBody("hi", { model }),
        });
      assert.equal((await chat("gpt-4o-mini")).status, 200);
      assert.equal((await chat("my-local-llama")).status, 200);
      assert.equal((await chat("gpt-4.1")).status, 200);
      const logs = (await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/priced/logs?order_by_direction=asc`)).body.result;
      // The mock provider reports 11 input and 7 output tokens.
      assert.ok(Math.abs(logs[0].cost - (11 * 1000 + 7 * 2000) / 1e6) < 1e-12, "the file's price replaces the shipped one");
      assert.ok(Math.abs(logs[1].cost - (11 * 3 + 7 * 5) / 1e6) < 1e-12, "and adds models");
      assert.ok(Math.abs(logs[2].cost - (11 * 2 + 7 * 8) / 1e6) < 1e-12, "the shipped table still prices the rest");
    } finally {
      await p.dispose();
    }
    await assert.rejects(
      startGatewayPlatform([`openai=${mock.url}`], { args: ["--ai-gateway-prices", file("broken.json", "{")] }),
      /--ai-gateway-prices .*broken\.json/,
    );
  });
});
