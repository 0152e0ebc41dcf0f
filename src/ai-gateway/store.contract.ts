import assert from "node:assert/strict";
import { EdgeError } from "../core/errors.js";
import { storeContract } from "../core/testing/contract.js";
import { AigCodes } from "./errors.js";
import type { AiGatewayStores } from "./store.js";
import type { LogFilter, LogQuery, LogRecord } from "./logs/store.js";
import { A, B, sampleLog as log, sampleSettings as settings } from "./testing/sample-log.js";

const all = (filter: LogFilter = { conditions: [] }): LogQuery => ({ filter, order: { by: "created_at", direction: "asc" } });
const ids = (logs: LogRecord[]) => logs.map((l) => l.id);
const nextMillisecond = () => new Promise((resolve) => setTimeout(resolve, 2));

/** What the AI gateway's stores do, whatever keeps the data (run by sqlite-store.test.ts). */
export const describeAiGatewayStores = storeContract<AiGatewayStores>("AiGatewayStores", (it) => {
  it("creates, reads, replaces and deletes gateways per account; a taken id is a 409", async ({ gateways }) => {
    const g = await gateways.create(A, "main", settings({ cache_ttl: 60 }));
    assert.equal(g.id, "main");
    assert.equal(g.account_id, A);
    assert.equal(g.cache_ttl, 60);
    assert.equal(g.created_at, g.modified_at);
    assert.deepEqual(await gateways.get(A, "main"), g);
    assert.equal(await gateways.get(B, "main"), undefined, "another account does not see it");
    await assert.rejects(gateways.create(A, "main", settings()), (err) => {
      assert.ok(err instanceof EdgeError);
      assert.equal(err.status, 409);
      assert.equal(err.errors[0].code, AigCodes.validation);
      assert.match(err.message, /a gateway "main" already exists/);
      return true;
    });
    const other = await gateways.create(B, "main", settings({ authentication: true }));
    assert.equal(other.authentication, true, "the same id in another account is another gateway");

    await nextMillisecond();
    // The API refuses logpush: true now; a gateway stored with it before (or any other value) reads back as it was kept.
    const changed = await gateways.update(A, "main", settings({ collect_logs: false, logpush: true, dlp: { enabled: false, action: "FLAG", profiles: [] } }));
    assert.equal(changed!.cache_ttl, 0, "an update replaces every setting");
    assert.equal(changed!.collect_logs, false);
    assert.equal(changed!.logpush, true, "extra settings are kept as the API wrote them");
    assert.deepEqual(changed!.dlp, { enabled: false, action: "FLAG", profiles: [] });
    assert.equal(changed!.created_at, g.created_at);
    assert.ok(changed!.modified_at > g.modified_at);
    assert.deepEqual(await gateways.get(A, "main"), changed);
    assert.equal(await gateways.update(A, "nope", settings()), undefined);

    assert.deepEqual(await gateways.delete(A, "main"), changed);
    assert.equal(await gateways.get(A, "main"), undefined);
    assert.equal(await gateways.delete(A, "main"), undefined);
    assert.deepEqual(await gateways.get(B, "main"), other);
  });

  it("lists an account's gateways oldest first, a page at a time, by a search that is plain text", async ({ gateways }) => {
    for (const id of ["b-one", "a-two", "a_x", "c-three"]) {
      await gateways.create(A, id, settings());
      await nextMillisecond();
    }
    await gateways.create(B, "b-other", settings());
    const page = await gateways.list(A, "", 2, 0);
    assert.deepEqual(
      page.items.map((g) => g.id),
      ["b-one", "a-two"],
    );
    assert.equal(page.total, 4);
    assert.deepEqual(
      (await gateways.list(A, "", 2, 2)).items.map((g) => g.id),
      ["a_x", "c-three"],
    );
    assert.deepEqual((await gateways.list(A, "", 2, 4)).items, []);
    assert.deepEqual(
      (await gateways.list(A, "-t", 10, 0)).items.map((g) => g.id),
      ["a-two", "c-three"],
    );
    const underscore = await gateways.list(A, "_", 10, 0);
    assert.deepEqual(
      underscore.items.map((g) => g.id),
      ["a_x"],
      "_ and % match themselves",
    );
    assert.equal(underscore.total, 1);
    assert.equal((await gateways.list(A, "%", 10, 0)).total, 0);
  });

  it("keeps every field of a log and shows it in the API's field order; bodies are read on their own", async ({ logs }) => {
    const usage = { tokens_in: 11, tokens_out: 7, cached_tokens: 2, reasoning_tokens: 3, cost: 0.5, cost_note: null, custom_cost: true };
    await logs.append([
      log(1, {
        ...usage,
        cached: true,
        authenticated: true,
        step: 1,
        request_type: "universal",
        metadata: { user: "u1", n: 2, ok: false },
        event_id: "e1",
        response_content_type: "text/event-stream",
        response_body: Buffer.from("data: x\n\n"),
        response_size: 9,
      }),
      log(2, { request_body: null, success: false, status_code: 500 }),
    ]);
    const one = await logs.get(A, "g", "L00000001");
    const expected = {
      id: "L00000001",
      created_at: new Date(1e12 + 1000).toISOString(),
      provider: "openai",
      model: "gpt-4o-mini",
      path: "chat/completions",
      request_type: "universal",
      status_code: 200,
      success: true,
      cached: true,
      step: 1,
      duration: 10,
      ...usage,
      request_content_type: "application/json",
      response_content_type: "text/event-stream",
      request_size: 1,
      response_size: 9,
      authenticated: true,
      event_id: "e1",
      feedback: null,
      score: null,
      metadata: { user: "u1", n: 2, ok: false },
    };
    assert.deepEqual(one, expected);
    assert.deepEqual(Object.keys(one!), Object.keys(expected), "the API's field order");
    assert.deepEqual(Object.keys(one!), Object.keys((await logs.list(A, "g", all())).logs[0]));
    assert.deepEqual(Object.keys(one!).slice(-3), ["feedback", "score", "metadata"], "metadata comes last, as the API has always shown it");
    assert.equal((await logs.get(A, "g", "L00000002"))!.success, false);

    assert.deepEqual(await logs.body(A, "g", "L00000001", "request"), { body: Buffer.from("q"), contentType: "application/json" });
    assert.deepEqual(await logs.body(A, "g", "L00000001", "response"), { body: Buffer.from("data: x\n\n"), contentType: "text/event-stream" });
    assert.deepEqual(await logs.body(A, "g", "L00000002", "request"), { body: null, contentType: "application/json" }, "a body not kept");
    assert.equal(await logs.body(A, "g", "L00000009", "request"), undefined);
    assert.equal(await logs.get(A, "other", "L00000001"), undefined, "a log belongs to its gateway");
    assert.equal(await logs.get(B, "g", "L00000001"), undefined, "and to its account");
  });

  it("filters logs on fields, nulls, text, ranges, total tokens, metadata and a search", async ({ logs }) => {
    await logs.append([
      log(1, { provider: "openai", tokens_in: 10, tokens_out: 5, cost: 1, metadata: { team: "red", n: 1 }, authenticated: true }),
      log(2, { provider: "groq", model: null, tokens_in: 1, tokens_out: null, cost: 2, success: false, status_code: 429, metadata: { team: "blue" } }),
      log(3, { provider: "anthropic", model: "claude-sonnet-4", tokens_in: null, tokens_out: null, cost: null, path: "v1/messages", event_id: "evt" }),
      log(4, { account_id: B }),
      log(5, { gateway_id: "other" }),
    ]);
    const where = async (filter: LogFilter) => ids((await logs.list(A, "g", all(filter))).logs);
    const one = (
      field: LogFilter["conditions"][number]["field"],
      operator: LogFilter["conditions"][number]["operator"],
      values: (string | number | boolean | null)[],
    ) => where({ conditions: [{ field, operator, values }] });

    assert.deepEqual(await where({ conditions: [] }), ["L00000001", "L00000002", "L00000003"], "only the gateway's own logs");
    assert.deepEqual(await one("provider", "eq", ["groq", "anthropic"]), ["L00000002", "L00000003"]);
    assert.deepEqual(await one("provider", "neq", ["groq"]), ["L00000001", "L00000003"]);
    assert.deepEqual(await one("model", "eq", [null]), ["L00000002"]);
    assert.deepEqual(await one("model", "neq", [null, "gpt-4o-mini"]), ["L00000003"]);
    assert.deepEqual(await one("model", "contains", ["sonnet"]), ["L00000003"]);
    assert.deepEqual(await one("success", "eq", [false]), ["L00000002"]);
    assert.deepEqual(await one("authentication", "eq", [true]), ["L00000001"]);
    assert.deepEqual(await one("status_code", "gt", [200]), ["L00000002"]);
    assert.deepEqual(await one("cost", "lt", [2]), ["L00000001"]);
    assert.deepEqual(await one("cost", "gte", [1]), ["L00000001", "L00000002"]);
    assert.deepEqual(await one("cost", "lte", [1]), ["L00000001"]);
    assert.deepEqual(await one("tokens", "gt", [1]), ["L00000001"], "tokens is tokens_in + tokens_out, a missing count as 0");
    assert.deepEqual(await one("tokens", "eq", [0]), ["L00000003"]);
    assert.deepEqual(await one("event_id", "eq", ["evt"]), ["L00000003"]);
    assert.deepEqual(await one("metadata.value", "eq", ["red"]), ["L00000001"]);
    assert.deepEqual(await one("metadata.value", "eq", [1]), ["L00000001"]);
    assert.deepEqual(await one("metadata.key", "eq", ["team"]), ["L00000001", "L00000002"]);
    assert.deepEqual(await one("metadata.value", "neq", ["red"]), ["L00000002", "L00000003"]);
    assert.deepEqual(await one("metadata.value", "contains", ["lu"]), ["L00000002"]);
    assert.deepEqual(await one("created_at", "gte", [new Date(1e12 + 2000).toISOString()]), ["L00000002", "L00000003"]);
    assert.deepEqual(await where({ conditions: [], search: "messages" }), ["L00000003"], "search looks in the path");
    assert.deepEqual(await where({ conditions: [], search: "L00000002" }), ["L00000002"], "and in the id");
    assert.deepEqual(
      await where({
        conditions: [
          { field: "cost", operator: "gte", values: [1] },
          { field: "success", operator: "eq", values: [true] },
        ],
      }),
      ["L00000001"],
      "every condition must hold",
    );
  });

  it("orders by a field either way, ties in write order, and pages with stats over the whole selection", async ({ logs }) => {
    await logs.append([
      log(1, { provider: "b", duration: 30, tokens_in: 5, tokens_out: 1, cost: 0.25 }),
      log(2, { provider: "a", duration: 10 }),
      log(3, { provider: "b", duration: 20, tokens_in: 1, tokens_out: 2, cost: 0.5 }),
      log(4, { provider: "a", duration: 40, success: false }),
    ]);
    const order = async (by: LogQuery["order"]["by"], direction: "asc" | "desc") =>
      ids((await logs.list(A, "g", { filter: { conditions: [] }, order: { by, direction } })).logs);
    assert.deepEqual(await order("created_at", "desc"), ["L00000004", "L00000003", "L00000002", "L00000001"]);
    assert.deepEqual(await order("duration", "asc"), ["L00000002", "L00000003", "L00000001", "L00000004"]);
    assert.deepEqual(await order("provider", "asc"), ["L00000002", "L00000004", "L00000001", "L00000003"]);
    assert.deepEqual(await order("provider", "desc"), ["L00000003", "L00000001", "L00000004", "L00000002"]);

    const page = await logs.list(A, "g", { filter: { conditions: [] }, order: { by: "created_at", direction: "asc" }, limit: 2, offset: 1 });
    assert.deepEqual(ids(page.logs), ["L00000002", "L00000003"]);
    assert.deepEqual(page.stats, {
      total_count: 4,
      min_cost: 0.25,
      max_cost: 0.5,
      min_duration: 10,
      max_duration: 40,
      min_tokens_in: 1,
      max_tokens_in: 5,
      min_tokens_out: 1,
      max_tokens_out: 2,
      min_total_tokens: 0,
      max_total_tokens: 6,
    });
    const failed = await logs.list(A, "g", { ...all({ conditions: [{ field: "success", operator: "eq", values: [false] }] }), limit: 1 });
    assert.equal(failed.stats.total_count, 1);
    assert.equal(failed.stats.max_duration, 40);
    const none = await logs.list(B, "g", all());
    assert.deepEqual(none.logs, []);
    assert.equal(none.stats.total_count, 0);
    assert.equal(none.stats.min_cost, null);
  });

  it("patches feedback, score and metadata of one log, and says when there is no such log", async ({ logs }) => {
    await logs.append([log(1, { metadata: { a: 1 } }), log(2)]);
    assert.equal(await logs.patch(A, "g", "L00000001", { feedback: 1, score: 90 }), true);
    let got = await logs.get(A, "g", "L00000001");
    assert.equal(got!.feedback, 1);
    assert.equal(got!.score, 90);
    assert.deepEqual(got!.metadata, { a: 1 }, "a field left out stays");
    assert.equal(await logs.patch(A, "g", "L00000001", { feedback: null, metadata: { reviewed: true } }), true);
    got = await logs.get(A, "g", "L00000001");
    assert.equal(got!.feedback, null);
    assert.equal(got!.score, 90);
    assert.deepEqual(got!.metadata, { reviewed: true });
    assert.equal(await logs.patch(A, "g", "L00000001", { metadata: null }), true);
    assert.equal((await logs.get(A, "g", "L00000001"))!.metadata, null);
    assert.equal(await logs.patch(A, "g", "L00000002", {}), true, "an empty patch of a log that exists");
    assert.equal((await logs.get(A, "g", "L00000002"))!.feedback, null, "the other log is untouched");
    assert.equal(await logs.patch(A, "g", "L00000009", { feedback: 1 }), false);
    assert.equal(await logs.patch(A, "g", "L00000009", {}), false);
    assert.equal(await logs.patch(B, "g", "L00000001", { feedback: -1 }), false, "another account's log");
    assert.equal((await logs.get(A, "g", "L00000001"))!.feedback, null);
  });

  it("deletes the logs a filter selects, or the first few of them in order, and only the gateway's", async ({ logs }) => {
    await logs.append([1, 2, 3, 4, 5].map((i) => log(i, { success: i % 2 === 1 })));
    await logs.append([log(6, { gateway_id: "other", success: false }), log(7, { account_id: B, success: false })]);
    const failed = { conditions: [{ field: "success" as const, operator: "eq" as const, values: [false] }] };
    assert.equal(await logs.delete(A, "g", all(failed)), 2);
    assert.deepEqual(ids((await logs.list(A, "g", all())).logs), ["L00000001", "L00000003", "L00000005"]);
    assert.equal(await logs.count(A, "g"), 3);
    assert.equal(await logs.delete(A, "g", { filter: { conditions: [] }, order: { by: "created_at", direction: "desc" }, limit: 2 }), 2, "the newest two");
    assert.deepEqual(ids((await logs.list(A, "g", all())).logs), ["L00000001"]);
    assert.equal(await logs.count(A, "other"), 1);
    assert.equal(await logs.count(B, "g"), 1);
    assert.equal(await logs.delete(A, "g", all()), 1);
    assert.equal(await logs.count(A, "g"), 0);
  });

  it("log_management: STOP_INSERTING keeps the first logs, DELETE_OLDEST the newest, and each batch reports the count", async ({ logs }) => {
    const counts = await logs.append(Array.from({ length: 10_005 }, (_, i) => log(i, { limit: 10_000, strategy: "STOP_INSERTING" })));
    assert.deepEqual(counts, [{ account_id: A, gateway_id: "g", count: 10_000 }]);
    assert.equal(await logs.count(A, "g"), 10_000);
    const span = async () => {
      const first = await logs.list(A, "g", { ...all(), limit: 1 });
      const last = await logs.list(A, "g", { filter: { conditions: [] }, order: { by: "created_at", direction: "desc" }, limit: 1 });
      return { lo: first.logs[0].id, hi: last.logs[0].id, n: first.stats.total_count };
    };
    assert.deepEqual(await span(), { lo: "L00000000", hi: "L00009999", n: 10_000 });
    await logs.append(Array.from({ length: 3 }, (_, i) => log(20_000 + i, { limit: 10_000, strategy: "DELETE_OLDEST" })));
    assert.deepEqual(await span(), { lo: "L00000003", hi: "L00020002", n: 10_000 });
    assert.deepEqual(
      await logs.body(A, "g", "L00000003", "request"),
      { body: Buffer.from("q"), contentType: "application/json" },
      "bodies are kept with their logs",
    );
    assert.deepEqual(await logs.body(A, "g", "L00020002", "request"), { body: Buffer.from("q"), contentType: "application/json" });
    assert.deepEqual(await logs.append([log(30_000)]), [], "a batch without limits reports no count");
    assert.equal(await logs.count(A, "g"), 10_001, "a log without a limit is always written");
  });

  it("writes a batch in its order, logs with a limit among many without: ties go by it, and a trim sees every log before it", async ({ logs }) => {
    // One second for all: the order of the rows decides. 10 logs without a limit (more than one multi-row insert
    // of the SQLite store, and not a whole number of them), one that may keep 5 and trims the oldest, 3 more.
    const at = { created_at: new Date(1e12).toISOString() };
    const batch = [
      ...Array.from({ length: 10 }, (_, i) => log(i, at)),
      log(10, { ...at, limit: 5, strategy: "DELETE_OLDEST" }),
      ...Array.from({ length: 3 }, (_, i) => log(11 + i, at)),
    ];
    assert.deepEqual(await logs.append(batch), [{ account_id: A, gateway_id: "g", count: 8 }], "the count after the whole batch");
    const listed = await logs.list(A, "g", all());
    assert.deepEqual(
      ids(listed.logs),
      Array.from({ length: 8 }, (_, i) => log(6 + i).id),
      "the 10 before the limited log were written before it trimmed; the 3 after it stay",
    );
    assert.deepEqual(
      ids((await logs.list(A, "g", { filter: { conditions: [] }, order: { by: "created_at", direction: "desc" } })).logs),
      ids(listed.logs).reverse(),
    );
  });

  it("deleting a gateway deletes its logs, and a new gateway of that id starts with none", async ({ gateways, logs }) => {
    await gateways.create(A, "g", settings({ log_management: 10_000, log_management_strategy: "STOP_INSERTING" }));
    await gateways.create(A, "kept", settings());
    const limited = (i: number) => log(i, { limit: 2, strategy: "STOP_INSERTING" });
    assert.deepEqual(await logs.append([limited(1), limited(2), limited(3), log(4, { gateway_id: "kept" })]), [{ account_id: A, gateway_id: "g", count: 2 }]);
    await gateways.delete(A, "g");
    assert.equal(await logs.count(A, "g"), 0);
    assert.equal(await logs.get(A, "g", "L00000001"), undefined);
    assert.equal(await logs.count(A, "kept"), 1, "other gateways keep theirs");
    await gateways.create(A, "g", settings());
    assert.deepEqual(await logs.append([limited(5)]), [{ account_id: A, gateway_id: "g", count: 1 }], "the limit counts from zero again");
  });

  it("provider keys: added to an existing gateway of one account, listed without their secret, replaced and deleted", async ({ gateways, keys }) => {
    await gateways.create(A, "main", settings());
    await gateways.create(B, "main", settings());
    await assert.rejects(keys.create(A, "absent", { provider_slug: "openai", alias: "default", default_config: true }, "sk-x", 10), (err) => {
      assert.ok(err instanceof EdgeError);
      assert.equal(err.status, 404);
      return true;
    });
    const k = await keys.create(A, "main", { provider_slug: "openai", alias: "default", default_config: true }, "sk-secret-a", 10);
    assert.equal(k.gateway_id, "main");
    assert.equal(k.provider_slug, "openai");
    assert.equal(k.alias, "default");
    assert.equal(k.default_config, true);
    assert.match(k.id, /^[0-9a-f]{32}$/);
    assert.match(k.secret_id, /^[0-9a-f]{32}$/);
    assert.ok(!JSON.stringify(k).includes("sk-secret-a"), "no answer carries the secret");
    assert.deepEqual(await keys.get(A, "main", k.id), k);
    assert.deepEqual(await keys.list(A, "main"), [k]);
    assert.equal(await keys.get(B, "main", k.id), undefined, "another account's gateway of the same id does not reach it");
    assert.deepEqual(await keys.list(B, "main"), []);
    assert.deepEqual(await keys.opened(B, "main"), []);
    assert.equal(await keys.replaceSecret(B, "main", k.id, "sk-evil"), undefined);
    assert.equal(await keys.delete(B, "main", k.id), undefined);
    assert.deepEqual(await keys.opened(A, "main"), [{ provider_slug: "openai", alias: "default", default_config: true, secret: "sk-secret-a" }]);

    await nextMillisecond();
    const replaced = await keys.replaceSecret(A, "main", k.id, "sk-secret-b");
    assert.equal(replaced!.id, k.id);
    assert.notEqual(replaced!.secret_id, k.secret_id, "a new secret is a new secret id");
    assert.ok(replaced!.modified_at > k.modified_at);
    assert.equal((await keys.opened(A, "main"))[0].secret, "sk-secret-b");
    assert.equal(await keys.replaceSecret(A, "main", "0".repeat(32), "sk-x"), undefined);

    assert.deepEqual(await keys.delete(A, "main", k.id), replaced);
    assert.equal(await keys.delete(A, "main", k.id), undefined);
    assert.deepEqual(await keys.list(A, "main"), []);
  });

  it("provider keys: a provider and alias name one key, one default per provider, a limit per gateway; a deleted gateway takes its keys", async ({
    gateways,
    keys,
  }) => {
    await gateways.create(A, "g", settings());
    const first = await keys.create(A, "g", { provider_slug: "openai", alias: "prod", default_config: true }, "sk-1", 3);
    await assert.rejects(keys.create(A, "g", { provider_slug: "openai", alias: "prod", default_config: true }, "sk-2", 3), (err) => {
      assert.ok(err instanceof EdgeError);
      assert.equal(err.status, 409);
      assert.match(err.message, /already has a openai key with the alias "prod"/);
      return true;
    });
    assert.equal((await keys.get(A, "g", first.id))!.default_config, true, "a refused default takes nothing from the one before");
    const second = await keys.create(A, "g", { provider_slug: "openai", alias: "staging", default_config: true }, "sk-2", 3);
    await keys.create(A, "g", { provider_slug: "anthropic", alias: "prod", default_config: true }, "sk-ant", 3);
    assert.deepEqual(
      (await keys.list(A, "g")).map((k) => [k.provider_slug, k.alias, k.default_config]),
      [
        ["anthropic", "prod", true],
        ["openai", "prod", false],
        ["openai", "staging", true],
      ],
      "the newer default of a provider took the flag; other providers keep theirs",
    );
    await assert.rejects(keys.create(A, "g", { provider_slug: "groq", alias: "x", default_config: false }, "gsk", 3), (err) => {
      assert.ok(err instanceof EdgeError);
      assert.equal(err.status, 400);
      assert.match(err.message, /at most 3 provider keys/);
      return true;
    });
    assert.equal((await keys.list(A, "g")).length, 3, "nothing was written");
    assert.ok(second);

    await gateways.delete(A, "g");
    await gateways.create(A, "g", settings());
    assert.deepEqual(await keys.list(A, "g"), [], "a new gateway of that id starts with no keys");
    assert.deepEqual(await keys.opened(A, "g"), []);
  });
});
