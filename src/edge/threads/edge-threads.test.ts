import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request, type IncomingHttpHeaders } from "node:http";
import { after, before, describe, it } from "node:test";
import { eventually } from "../../core/testing/eventually.js";
import { freeMetricsPort, sample, scrape } from "../../core/testing/metrics.js";
import { newTestCredentials, startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount, uploadScript } from "../../workers/testing/helpers.js";
import { startScriptedOrigin } from "../cache/testing/origin.js";
import { loopbackBlock } from "../testing/origins.js";

/** Requests on fresh connections: each is accepted by whichever of the edge's loops the kernel wakes. */
const CONNECTIONS = 48;
const HANG_GUARD = { timeout: 300_000 };

/** One request on a connection of its own (closed after it): accepted by whichever of the edge's loops the kernel wakes. */
function onFreshConnection(port: string, path: string, host: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: IncomingHttpHeaders; text: string }>((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, agent: false, headers: { host, connection: "close", ...headers } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("edge threads (--edge-threads 3): three loops accept on the edge port", HANG_GUARD, () => {
  let p: TestPlatform;
  let port: string;
  let metricsUrl: string;
  const address = loopbackBlock();
  let origin: Awaited<ReturnType<typeof startScriptedOrigin>>;
  let otherOrigin: Awaited<ReturnType<typeof startScriptedOrigin>>;
  const zone = `threads${randomBytes(4).toString("hex")}.example`;
  let zoneId: string;
  let recordId: string;
  const closing: (() => unknown)[] = [];
  const cleanups = { after: (fn: () => unknown) => void closing.push(fn) };

  const fresh = (path: string, host: string, headers: Record<string, string> = {}) => onFreshConnection(port, path, host, headers);
  /**
   * Two requests on one kept-alive connection: the first for the proxied name (a thread may serve the connection),
   * the second for `host` (the main thread's, carried there request by request). The second's answer.
   */
  const switching = async (path: string, host: string, headers: Record<string, string> = {}) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = (p: string, h: string, extra: Record<string, string>) =>
      new Promise<{ status: number; text: string; reused: boolean }>((resolve, reject) => {
        const req = request({ host: "127.0.0.1", port, path: p, agent, headers: { host: h, ...extra } }, (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (d: string) => (text += d));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text, reused: req.reusedSocket }));
          res.on("error", reject);
        });
        req.on("error", reject);
        req.end();
      });
    try {
      await get("/app.js", `www.${zone}`, {});
      const second = await get(path, host, headers);
      assert.ok(second.reused, "the second request went on the same connection");
      return second;
    } finally {
      agent.destroy();
    }
  };
  /** The answers of CONNECTIONS fresh connections, made one after the other. */
  const many = async (path: string, host = `www.${zone}`, headers: Record<string, string> = {}) => {
    const answers = [];
    for (let i = 0; i < CONNECTIONS; i++) answers.push(await fresh(path, host, headers));
    return answers;
  };

  before(async () => {
    const metricsPort = await freeMetricsPort();
    p = await startTestPlatform({ args: ["--edge-threads", "3", "--origin-allow", "127.0.0.0/8", "--metrics-port", String(metricsPort)] });
    port = new URL(p.url).port;
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    origin = await startScriptedOrigin(cleanups, address(1));
    otherOrigin = await startScriptedOrigin(cleanups, address(2));
    zoneId = (await p.api("POST", "/zones", { name: zone, account: { id: p.accountId } })).body.result.id;
    const record = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "A", name: "www", content: address(1), proxied: true });
    assert.equal(record.status, 200, JSON.stringify(record.body));
    recordId = record.body.result.id;
  });
  after(async () => {
    for (const cleanup of closing) await cleanup();
    await p?.dispose();
  });

  it("each loop serves proxied names and keeps a cache of its own", async () => {
    origin.route("/app.js", (_req, res) => res.writeHead(200, { "cache-control": "max-age=3600", "cache-tag": "app" }).end("app v1"));
    const answers = await many("/app.js");
    assert.deepEqual(new Set(answers.map((a) => a.text)), new Set(["app v1"]));
    // One origin fetch per loop that answered: more than one shows the threads serve (each fills its own cache).
    const fills = origin.count("/app.js");
    assert.ok(fills >= 2 && fills <= 3, `${fills} loops filled their cache from ${CONNECTIONS} connections`);
    assert.equal(answers.filter((a) => a.headers["cf-cache-status"] === "MISS").length, fills);
  });

  it("a purge is applied by every loop before its call answers", async () => {
    origin.route("/app.js", (_req, res) => res.writeHead(200, { "cache-control": "max-age=3600", "cache-tag": "app" }).end("app v2"));
    for (const body of [{ tags: ["app"] }, { files: [`http://www.${zone}/app.js`] }, { purge_everything: true }]) {
      await many("/app.js");
      const purged = await p.api("POST", `/zones/${zoneId}/purge_cache`, body);
      assert.equal(purged.status, 200, JSON.stringify(purged.body));
      const version = `app v${randomBytes(3).toString("hex")}`;
      origin.route("/app.js", (_req, res) => res.writeHead(200, { "cache-control": "max-age=3600", "cache-tag": "app" }).end(version));
      const answers = await many("/app.js");
      assert.deepEqual(new Set(answers.map((a) => a.text)), new Set([version]), `after a purge by ${Object.keys(body)[0]}, no loop answers what it held`);
    }
  });

  it("a record, a setting and a Cache Rule changed through the API are served by every loop once the call answers", async () => {
    otherOrigin.route("/who", (_req, res) => res.end("other origin"));
    origin.route("/who", (_req, res) => res.end("first origin"));
    assert.deepEqual(new Set((await many("/who")).map((a) => a.text)), new Set(["first origin"]));
    const moved = await p.api("PATCH", `/zones/${zoneId}/dns_records/${recordId}`, { content: address(2) });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    assert.deepEqual(new Set((await many("/who")).map((a) => a.text)), new Set(["other origin"]));

    otherOrigin.route("/lib.js", (_req, res) => res.writeHead(200, { "cache-control": "max-age=3600" }).end("lib"));
    await many("/lib.js");
    assert.equal((await p.api("PATCH", `/zones/${zoneId}/settings/development_mode`, { value: "on" })).status, 200);
    assert.deepEqual(new Set((await many("/lib.js")).map((a) => a.headers["cf-cache-status"])), new Set(["BYPASS"]));
    assert.equal((await p.api("PATCH", `/zones/${zoneId}/settings/development_mode`, { value: "off" })).status, 200);
    assert.ok(!(await many("/lib.js")).some((a) => a.headers["cf-cache-status"] === "BYPASS"));

    otherOrigin.route("/page.html", (_req, res) => res.end("<p>page</p>"));
    assert.deepEqual(new Set((await many("/page.html")).map((a) => a.headers["cf-cache-status"])), new Set(["DYNAMIC"]));
    const rules = await p.api("PUT", `/zones/${zoneId}/rulesets/phases/http_request_cache_settings/entrypoint`, {
      rules: [
        {
          expression: 'http.request.uri.path.extension eq "html"',
          action: "set_cache_settings",
          action_parameters: { cache: true, edge_ttl: { mode: "override_origin", default: 3600 } },
        },
      ],
    });
    assert.equal(rules.status, 200, JSON.stringify(rules.body));
    const cached = (await many("/page.html")).map((a) => a.headers["cf-cache-status"]);
    assert.ok(!cached.includes("DYNAMIC"), `after the rule: ${cached.join(" ")}`);
  });

  it("connections a thread hands over keep the client's addresses: the loopback rule and a Worker's CF-Connecting-IP", async () => {
    // A host nothing claims is the API's on loopback only: a handed-over connection that lost its local address would
    // get the edge's error page (1001) instead.
    const unclaimed = `unclaimed-${randomBytes(3).toString("hex")}.test`;
    for (const a of await many("/client/v4/user/tokens/verify", unclaimed, { authorization: `Bearer ${p.token}` })) assert.equal(a.status, 200, a.text);
    // The same on a connection a thread may be serving already (a later request for another host).
    for (let i = 0; i < CONNECTIONS / 2; i++) {
      const a = await switching("/client/v4/user/tokens/verify", unclaimed, { authorization: `Bearer ${p.token}` });
      assert.equal(a.status, 200, a.text);
      assert.equal(JSON.parse(a.text).success, true);
    }
    const uploaded = await uploadScript(
      p,
      "threads-ip",
      `export default { fetch: (request) => new Response("ip " + request.headers.get("cf-connecting-ip")) };`,
    );
    assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
    const route = await p.api("POST", `/zones/${zoneId}/workers/routes`, { pattern: `www.${zone}/ip*`, script: "threads-ip" });
    assert.equal(route.status, 200, JSON.stringify(route.body));
    // The route table reaches every loop before the call answers: no request is proxied to the origin any more.
    const answers = await many("/ip");
    assert.deepEqual(new Set(answers.map((a) => a.text)), new Set(["ip 127.0.0.1"]));
    for (let i = 0; i < CONNECTIONS / 2; i++) assert.equal((await switching("/ip", `www.${zone}`)).text, "ip 127.0.0.1");
  });

  it("the threads' requests are counted in the metrics and the analytics", async () => {
    const counted = () => sample(text, "edgeplatform_edge_requests_total", `area="proxy",status_class="2xx",zone="${zone}"`) ?? 0;
    let text = await scrape(metricsUrl);
    // The threads report their counts every second: the earlier tests' last requests are in once two scrapes more
    // than a second apart agree.
    for (let last = Number.NaN; last !== counted();) {
      last = counted();
      await new Promise((r) => setTimeout(r, 1_200));
      text = await scrape(metricsUrl);
    }
    const before = counted();
    const answered = await many("/lib.js");
    assert.deepEqual(new Set(answered.map((a) => a.status)), new Set([200]), answered.map((a) => `${a.status} ${a.text.slice(0, 60)}`).join("; "));
    await eventually(async () => {
      text = await scrape(metricsUrl);
      return counted() - before === CONNECTIONS;
    }, `the ${CONNECTIONS} requests counted, no more and no fewer`);
  });

  it("a deleted zone is no longer proxied by any loop once the call answers; another account's zone is untouched", async () => {
    const accountB = await createAccount(p, "threads-b");
    const zoneB = `threads-b-${randomBytes(4).toString("hex")}.example`;
    const b = (await p.api("POST", "/zones", { name: zoneB, account: { id: accountB } }, p.keyHeaders())).body.result.id;
    assert.equal((await p.api("POST", `/zones/${b}/dns_records`, { type: "A", name: "www", content: address(1), proxied: true }, p.keyHeaders())).status, 200);
    origin.route("/b", (_req, res) => res.end("b's site"));
    assert.deepEqual(new Set((await many("/b", `www.${zoneB}`)).map((a) => a.text)), new Set(["b's site"]));
    assert.equal((await p.api("DELETE", `/zones/${zoneId}`)).status, 200);
    const gone = await many("/who");
    assert.ok(
      gone.every((a) => a.status >= 400 && !a.text.includes("origin")),
      gone.map((a) => `${a.status}`).join(" "),
    );
    assert.deepEqual(new Set((await many("/b", `www.${zoneB}`)).map((a) => a.text)), new Set(["b's site"]));
  });
});

describe("edge threads across restarts and slow heads (--edge-threads 3)", HANG_GUARD, () => {
  const address = loopbackBlock();
  const stateDir = mkdtempSync(join(tmpdir(), "edge-threads-restart-"));
  const credentials = newTestCredentials();
  const args = ["--edge-threads", "3", "--origin-allow", "127.0.0.0/8", "--request-head-timeout", "2"];
  const closing: (() => unknown)[] = [];
  let p: TestPlatform;
  let origin: Awaited<ReturnType<typeof startScriptedOrigin>>;
  const zone = `restart${randomBytes(4).toString("hex")}.example`;

  const fresh = (path: string) => onFreshConnection(new URL(p.url).port, path, `www.${zone}`);
  const fetches = async (path: string) => {
    const before = origin.count(path);
    for (let i = 0; i < CONNECTIONS; i++) assert.equal((await fresh(path)).status, 200);
    return origin.count(path) - before;
  };

  before(async () => {
    p = await startTestPlatform({ stateDir, credentials, args });
    origin = await startScriptedOrigin({ after: (fn) => void closing.push(fn) }, address(1));
    origin.route("/kept.js", (_req, res) => res.writeHead(200, { "cache-control": "max-age=3600" }).end("kept"));
    origin.route("/again.js", (_req, res) => res.writeHead(200, { "cache-control": "max-age=3600" }).end("again"));
    const zoneId = (await p.api("POST", "/zones", { name: zone, account: { id: p.accountId } })).body.result.id;
    assert.equal((await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "A", name: "www", content: address(1), proxied: true })).status, 200);
  });
  after(async () => {
    for (const cleanup of closing) await cleanup();
    await p?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it("every loop's head timeout holds on kept-alive connections: a trickled second head is cut", async () => {
    const port = Number(new URL(p.url).port);
    const ended = await Promise.all(
      Array.from(
        { length: 12 },
        () =>
          new Promise<string>((resolve, reject) => {
            const socket = connect(port, "127.0.0.1");
            let text = "";
            let trickle: NodeJS.Timeout | undefined;
            const guard = setTimeout(() => resolve(`still open: ${text.slice(0, 80)}`), 30_000);
            socket.on("error", reject);
            socket.on("close", () => {
              clearInterval(trickle);
              clearTimeout(guard);
              resolve("closed");
            });
            socket.write(`GET /kept.js HTTP/1.1\r\nHost: www.${zone}\r\n\r\n`);
            socket.on("data", (d: Buffer) => {
              text += d.toString("latin1");
              // The first answer is in: the second head, a byte at a time, never ends.
              if (trickle === undefined && /\r\n\r\n[\s\S]*kept/.test(text)) {
                const head = `GET /kept.js HTTP/1.1\r\nHost: www.${zone}\r\nX-Slow: `;
                let i = 0;
                trickle = setInterval(() => socket.write(i < head.length ? head[i++] : "a"), 200);
              }
            });
          }),
      ),
    );
    assert.deepEqual(new Set(ended), new Set(["closed"]));
  });

  it("a clean restart keeps every loop's cache; after a kill the threads' shares start empty, the main thread's is kept", async () => {
    const filled = await fetches("/again.js");
    assert.ok(filled >= 1 && filled <= 3, `${filled}`);
    await fetches("/again.js");
    await p.stop();
    p = await startTestPlatform({ stateDir, credentials, args });
    assert.equal(await fetches("/again.js"), 0, "after a clean stop no loop fetched the object again");
    p.process.kill("SIGKILL");
    await new Promise((resolve) => p.process.once("exit", resolve));
    p = await startTestPlatform({ stateDir, credentials, args });
    const refetched = await fetches("/again.js");
    // The threads missed whatever was purged while the process was gone: their shares are empty. The main thread's
    // cache applies every purge before it answers, so it is kept (no fetch from it).
    assert.ok(refetched >= 1 && refetched <= 2, `after a kill the threads fetched the object again (${refetched} fetches)`);
  });
});
