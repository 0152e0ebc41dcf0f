import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { after, before, test } from "node:test";
import WebSocket from "ws";
import { CLI_PATH, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, startPlatform, uploadScript } from "../testing/helpers.js";
import { startWrangler, wranglerVersions } from "../testing/wrangler.js";
import { eventually } from "../../core/testing/eventually.js";
import { withTempDir } from "../../core/testing/temp-dir.js";

/**
 * Live tail end to end: the real platform, the script on workerd with its tail worker, the tail API, its WebSocket
 * and the real `edgecli tail`.
 */

let p: TestPlatform;
before(async () => {
  p = await startPlatform();
  assert.equal((await uploadScript(p, "tail-demo", SCRIPT)).status, 200);
  const secret = await p.api("PUT", `/accounts/${p.accountId}/workers/scripts/tail-demo/secrets`, { name: "API_SECRET", text: SECRET, type: "secret_text" });
  assert.equal(secret.status, 200);
});
after(async () => {
  await p?.dispose();
});

const HANG_GUARD = { timeout: 180_000 };
const SECRET = "s3cr3t-value-7731";

const SCRIPT = `export default {
  async fetch(req, env) {
    const url = new URL(req.url);
    console.log("visit", url.pathname + url.search, { n: 1 });
    if (url.pathname === "/throw") throw new Error("kaboom " + url.searchParams.get("id"));
    if (url.pathname === "/leak") console.log("the secret is", env.API_SECRET);
    console.warn("warned");
    return new Response("ok " + (env.API_SECRET ? "has secret" : "no secret"));
  },
};`;

const tails = (script = "tail-demo", account = p.accountId) => `/accounts/${account}/workers/scripts/${script}/tails`;

/** Opens a tail session through the API and connects to it as wrangler does; events are collected as they come. */
async function openTail(filters: unknown[] = []): Promise<{ id: string; ws: WebSocket; events: any[] }> {
  const r = await p.api("POST", tails(), { filters });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const { id, url, expires_at } = r.body.result;
  assert.match(url, new RegExp(`^ws://127\\.0\\.0\\.1:\\d+/tail/v1/${id}$`));
  assert.ok(Date.parse(expires_at) > Date.now());
  const ws = new WebSocket(url, "trace-v1");
  const events: any[] = [];
  ws.on("message", (d: Buffer) => events.push(JSON.parse(d.toString())));
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  assert.equal(ws.protocol, "trace-v1");
  ws.send(JSON.stringify({ debug: false }));
  return { id, ws, events };
}

const requestOf = (e: any) => e.event?.request;

test("a tail receives each request's summary, its console output and its uncaught exception; secrets stay out", HANG_GUARD, async () => {
  const { id, ws, events } = await openTail();
  assert.equal((await hit(p, "tail-demo", "/hello?x=1", { headers: { authorization: "Bearer client-token" } })).text, "ok has secret");
  await eventually(() => events.some((e) => requestOf(e)?.url.endsWith("/hello?x=1")), "the request's event");
  const ok = events.find((e) => requestOf(e)?.url.endsWith("/hello?x=1"));
  assert.equal(ok.outcome, "ok");
  assert.equal(ok.scriptName, "tail-demo");
  assert.equal(typeof ok.eventTimestamp, "number");
  assert.equal(ok.event.request.method, "GET");
  assert.equal(ok.event.response.status, 200);
  assert.equal(ok.event.request.headers.authorization, "REDACTED", "workerd redacts credentials in traces");
  assert.deepEqual(
    ok.logs.map((l: any) => [l.level, l.message]),
    [
      ["log", ["visit", "/hello?x=1", { n: 1 }]],
      ["warn", ["warned"]],
    ],
  );
  assert.deepEqual(ok.exceptions, []);

  assert.equal((await hit(p, "tail-demo", "/throw?id=41")).status, 500);
  await eventually(() => events.some((e) => e.outcome === "exception"), "the exception's event");
  const failed = events.find((e) => e.outcome === "exception");
  assert.equal(failed.exceptions[0].name, "Error");
  assert.equal(failed.exceptions[0].message, "kaboom 41");
  assert.ok(!JSON.stringify(events).includes(SECRET), "the secret is in no event");
  // Unless the script logs it itself.
  await hit(p, "tail-demo", "/leak");
  await eventually(() => events.some((e) => requestOf(e)?.url.endsWith("/leak")), "the leak's event");
  assert.ok(JSON.stringify(events.find((e) => requestOf(e)?.url.endsWith("/leak"))).includes(SECRET));

  const listed = await p.api("GET", tails());
  assert.deepEqual(
    listed.body.result.map((s: any) => s.id),
    [id],
  );
  const closed = new Promise<number>((resolve) => ws.once("close", (code) => resolve(code)));
  assert.equal((await p.api("DELETE", `${tails()}/${id}`)).status, 200);
  assert.equal(await closed, 1000);
  assert.equal((await p.api("DELETE", `${tails()}/${id}`)).status, 404);
  assert.deepEqual((await p.api("GET", tails())).body.result, []);
});

test("filters: outcome, method, search and header, as wrangler sends them", HANG_GUARD, async () => {
  const errors = await openTail([{ outcome: ["exception", "exceededCpu", "exceededMemory", "unknown"] }]);
  const posts = await openTail([{ method: ["POST"] }, { query: "needle" }]);
  const headed = await openTail([{ header: { key: "x-trace", query: "yes" } }]);
  await hit(p, "tail-demo", "/plain");
  await hit(p, "tail-demo", "/haystack", { method: "POST", body: "x" });
  await hit(p, "tail-demo", "/needle", { method: "GET" });
  await hit(p, "tail-demo", "/with-header", { headers: { "x-trace": "no" } });
  await hit(p, "tail-demo", "/needle", { method: "POST", body: "x", headers: { "x-trace": "yes" } });
  await hit(p, "tail-demo", "/throw?id=2");
  await eventually(() => errors.events.length > 0 && posts.events.length > 0 && headed.events.length > 0, "the filtered events");
  // The last request of each kind was sent after the others, and every event of a session is checked.
  await eventually(() => errors.events.some((e) => requestOf(e).url.endsWith("/throw?id=2")), "the error");
  assert.ok(errors.events.every((e) => e.outcome === "exception"));
  assert.ok(posts.events.every((e) => requestOf(e).method === "POST" && requestOf(e).url.endsWith("/needle")));
  assert.ok(headed.events.every((e) => requestOf(e).headers["x-trace"] === "yes"));
  const bad = await p.api("POST", tails(), { filters: [{ outcome: ["fine"] }] });
  assert.equal(bad.status, 400);
  assert.equal((await p.api("POST", tails(), { filters: [{ scriptVersion: "x" }] })).status, 400, "an unknown filter is refused");
  for (const t of [errors, posts, headed]) assert.equal((await p.api("DELETE", `${tails()}/${t.id}`)).status, 200);
});

test("another account cannot open, list or delete a tail on my script, nor join one without its id", HANG_GUARD, async () => {
  const other = await createAccount(p, "Tail neighbour");
  const minted = await p.api("POST", "/user/tokens", { name: "other", permissions: ["workers_edit"], account_id: other }, p.keyHeaders());
  const theirs = { authorization: `Bearer ${minted.body.result.value}` };
  // Their token on my account's path: no access to the account.
  assert.equal((await p.api("POST", tails(), {}, theirs)).status, 403);
  assert.equal((await p.api("GET", tails(), undefined, theirs)).status, 403);
  // My script's name on their own account: no such Worker there.
  const mine = await p.api("POST", tails("tail-demo", other), {}, theirs);
  assert.equal(mine.status, 404);
  assert.equal(mine.body.errors[0].code, 10007);
  // A session of mine cannot be deleted through their account.
  const { id, ws } = await openTail();
  // The id is the WebSocket's credential: the platform's log names the session by a prefix only.
  await eventually(() => p.logs().includes(`"tail":"${id.slice(0, 8)}"`), "the session's log line");
  assert.ok(
    !p.output().includes(id),
    p
      .output()
      .split("\n")
      .filter((l) => l.includes(id))
      .join("\n"),
  );
  assert.equal((await p.api("DELETE", `${tails("tail-demo", other)}/${id}`, undefined, theirs)).status, 404);
  // The WebSocket address needs the session's id, and the trace-v1 protocol.
  const port = new URL(p.url).port;
  const refused = (url: string, protocol?: string) =>
    new Promise<number>((resolve) => {
      const c = new WebSocket(url, protocol);
      c.once("unexpected-response", (_q, res) => resolve(res.statusCode ?? 0));
      c.once("open", () => resolve(101));
      c.once("error", () => undefined);
    });
  assert.equal(await refused(`ws://127.0.0.1:${port}/tail/v1/${"0".repeat(32)}`, "trace-v1"), 404);
  assert.equal(await refused(`ws://127.0.0.1:${port}/tail/v1/${id}`, "trace-v1"), 409, "one client per session");
  ws.close();
  await p.api("DELETE", `${tails()}/${id}`);
});

/**
 * The workerd config the script's newest version runs with (older version directories are removed). The platform
 * creates a version's directory before it writes the config into it, so a read can fall between the two: "" then,
 * which no caller takes for a config with or without the tail worker.
 */
function liveConfig(script = "tail-demo"): string {
  const dir = join(p.stateDir, "workers-run", script);
  const newest = Math.max(
    ...readdirSync(dir)
      .filter((d) => /^\d+$/.test(d))
      .map(Number),
  );
  try {
    return readFileSync(join(dir, String(newest), "config.capnp"), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "";
    throw err;
  }
}
const runsWithoutTail = () => {
  const config = liveConfig();
  return config !== "" && !config.includes("edge-tail");
};

test("the tail worker runs only while someone tails the script; switching it on and off drops no request", HANG_GUARD, async () => {
  for (const s of (await p.api("GET", tails())).body.result) await p.api("DELETE", `${tails()}/${s.id}`);
  await eventually(runsWithoutTail, "the script to run without the tail worker");
  const versionBefore = (await p.api("GET", `/accounts/${p.accountId}/workers/scripts/tail-demo/versions`)).body.result;
  // Requests keep going while the script starts again with the worker, then without it.
  let going = true;
  const answers: number[] = [];
  const load = (async () => {
    while (going) answers.push((await hit(p, "tail-demo", "/steady")).status);
  })();
  const { id, ws, events } = await openTail();
  assert.match(liveConfig(), /edge-tail/, "the session's answer came once the worker was attached");
  await hit(p, "tail-demo", "/seen");
  await eventually(() => events.some((e) => requestOf(e)?.url.endsWith("/seen")), "the request's event");
  ws.close();
  assert.equal((await p.api("DELETE", `${tails()}/${id}`)).status, 200);
  await eventually(runsWithoutTail, "the tail worker to be detached once the last session ended");
  going = false;
  await load;
  assert.ok(answers.length > 0);
  assert.deepEqual([...new Set(answers)], [200], "every request during both switches was answered");
  assert.deepEqual((await p.api("GET", `/accounts/${p.accountId}/workers/scripts/tail-demo/versions`)).body.result, versionBefore, "the same version runs");
});

/** `edgecli tail` as a running child process; `lines` are its stdout lines so far. */
function startTail(args: string[]) {
  const child = spawn(process.execPath, [CLI_PATH, "tail", ...args], {
    env: { ...process.env, NO_COLOR: "1", EDGE_API_URL: p.apiUrl, EDGE_API_TOKEN: p.token, EDGE_ACCOUNT_ID: p.accountId },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number>((resolve) => child.once("exit", (code) => resolve(code ?? 1)));
  return { child, exited, lines: () => out.split("\n").filter(Boolean), stderr: () => err };
}

test("edgecli tail streams a Worker's events (json and pretty, with filters) and deletes its session on Ctrl-C", HANG_GUARD, async () => {
  const json = startTail(["tail-demo", "--format", "json", "--status", "error"]);
  // Until the session's WebSocket is joined, events are not sent: requests are repeated until one shows.
  await eventually(
    async () => {
      await hit(p, "tail-demo", "/throw?id=cli");
      return json.lines().length > 0;
    },
    "edgecli tail to print an event",
    60_000,
  );
  await hit(p, "tail-demo", "/fine");
  await hit(p, "tail-demo", "/throw?id=last");
  await eventually(() => json.lines().some((l) => l.includes("kaboom last")), "the last error");
  const events = json.lines().map((l) => JSON.parse(l));
  assert.ok(
    events.every((e) => e.outcome === "exception" && e.exceptions[0].message.startsWith("kaboom")),
    json.lines().join("\n"),
  );

  const pretty = startTail(["--name", "tail-demo", "--format", "pretty", "--method", "POST", "--search", "needle"]);
  await eventually(() => pretty.lines().some((l) => l.startsWith("Connected to tail-demo")), "the pretty tail to connect", 60_000);
  await hit(p, "tail-demo", "/needle", { method: "GET" });
  await hit(p, "tail-demo", "/hay", { method: "POST", body: "x" });
  await hit(p, "tail-demo", "/needle?q=1", { method: "POST", body: "x" });
  await eventually(() => pretty.lines().some((l) => l.includes("/needle?q=1")), "the matching request");
  const shown = pretty.lines().filter((l) => !l.startsWith("Connected"));
  assert.match(shown[0]!, /^POST http:\/\/tail-demo\.workers\.localhost:\d+\/needle\?q=1 - Ok \(200\) @ \d{4}-/);
  assert.deepEqual(shown.slice(1, 3), ['  (log) visit /needle?q=1 {"n":1}', "  (warn) warned"]);

  for (const t of [json, pretty]) {
    t.child.kill("SIGINT");
    assert.equal(await t.exited, 0, t.stderr());
  }
  assert.deepEqual((await p.api("GET", tails())).body.result, [], "both sessions were deleted");
});

test("the session's WebSocket takes wrangler's unmasked first message and answers pings (as the hosted service does)", HANG_GUARD, async () => {
  const res = await fetch(`${p.apiUrl}${tails()}`, {
    method: "POST",
    headers: p.headers({ "content-type": "text/plain" }),
    body: JSON.stringify({ filters: [] }),
  });
  const r = { status: res.status, body: (await res.json()) as any };
  assert.equal(r.status, 200, "wrangler's body arrives as text and is read as JSON");
  const url = new URL(r.body.result.url);
  const socket = connect(Number(url.port), "127.0.0.1");
  let got = Buffer.alloc(0);
  socket.on("data", (d: Buffer) => (got = Buffer.concat([got, d])));
  socket.write(
    `GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${Buffer.alloc(16, 7).toString("base64")}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: trace-v1\r\n\r\n`,
  );
  await eventually(() => got.includes("\r\n\r\n"), "the handshake answer");
  assert.match(got.toString("latin1"), /^HTTP\/1.1 101 .*\r\n[^]*Sec-WebSocket-Protocol: trace-v1\r\n/);
  got = Buffer.alloc(0);
  const debug = Buffer.from(JSON.stringify({ debug: false }));
  socket.write(Buffer.concat([Buffer.from([0x81, debug.length]), debug])); // text, final, NOT masked
  socket.write(Buffer.from([0x89, 0x84, 1, 2, 3, 4, 0x70 ^ 1, 0x69 ^ 2, 0x6e ^ 3, 0x67 ^ 4])); // masked ping "ping"
  await eventually(() => got.length >= 6, "the pong");
  assert.deepEqual([...got.subarray(0, 6)], [0x8a, 4, 0x70, 0x69, 0x6e, 0x67]);
  got = Buffer.alloc(0);
  await hit(p, "tail-demo", "/raw-client");
  await eventually(() => got.includes("/raw-client"), "the event on the raw connection");
  socket.destroy();
  await p.api("DELETE", `${tails()}/${r.body.result.id}`);
});

// Last: it stops the platform.
/**
 * The objects `wrangler tail --format json` printed so far: it prints each event as indented JSON (several lines, the
 * object's closing brace alone at the start of a line), among its own messages.
 */
function jsonEventsOf(stdout: string): any[] {
  const events: any[] = [];
  for (const block of stdout.matchAll(/^\{\n[\s\S]*?^\}$/gm)) events.push(JSON.parse(block[0]));
  return events;
}

// Issue 31: `wrangler tail` never exits by itself, so it is started, read while it runs, then interrupted.
for (const version of wranglerVersions()) {
  test(`wrangler ${version} tail --format json prints a request's event with its console output`, HANG_GUARD, async () => {
    const name = `tail-wrangler${version}`;
    assert.equal((await uploadScript(p, name, SCRIPT)).status, 200);
    await withTempDir("wrangler-tail-", async (cwd) => {
      const tail = startWrangler(p, ["tail", name, "--format", "json"], { cwd, version });
      try {
        // Events flow once wrangler has joined the session's WebSocket: requests are repeated until one shows.
        await eventually(
          async () => {
            if (tail.child.exitCode !== null) throw new Error(`wrangler exited ${tail.child.exitCode}: ${tail.stdout()}\n${tail.stderr()}`);
            await hit(p, name, `/from-wrangler${version}?q=1`);
            return jsonEventsOf(tail.stdout()).length > 0;
          },
          `wrangler ${version} tail to print an event`,
          90_000,
        );
        const event = jsonEventsOf(tail.stdout())[0];
        assert.equal(event.outcome, "ok");
        assert.equal(event.scriptName, name);
        assert.match(event.event.request.url, new RegExp(`/from-wrangler${version}\\?q=1$`));
        assert.equal(event.event.request.method, "GET");
        assert.deepEqual(event.logs[0].message, ["visit", `/from-wrangler${version}?q=1`, { n: 1 }]);
        assert.ok(!tail.stdout().includes(SECRET) && !tail.stderr().includes(SECRET));
      } finally {
        tail.child.kill("SIGINT");
        await tail.exited;
      }
    });
    // wrangler deletes its session on Ctrl-C, though it may exit before the DELETE is answered: deleting the script
    // ends whatever remains.
    assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/workers/scripts/${name}`)).status, 200);
  });
}

/**
 * Issue 30 hole 9: sessions outlived their script, so the next account to take the name could not tail its own
 * Worker (the name's 10 sessions were taken) for up to 6 h. They end with the script; a script of the same name made
 * later by another account is not reachable through them.
 */
test("deleting a script ends its tail sessions; the next account to take the name tails its own Worker, not through the old sessions", HANG_GUARD, async () => {
  const name = "tail-gone";
  assert.equal((await uploadScript(p, name, SCRIPT)).status, 200);
  const mine: { id: string }[] = [];
  for (let i = 0; i < 10; i++) {
    const r = await p.api("POST", tails(name), {});
    assert.equal(r.status, 200, JSON.stringify(r.body));
    mine.push(r.body.result);
  }
  const ws = new WebSocket(`ws://127.0.0.1:${new URL(p.url).port}/tail/v1/${mine[0]!.id}`, "trace-v1");
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })));
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/workers/scripts/${name}`)).status, 200);
  assert.deepEqual(await closed, { code: 1000, reason: "the script was deleted" });

  const other = await createAccount(p, "Tail next owner");
  const minted = await p.api("POST", "/user/tokens", { name: "next", permissions: ["workers_edit"], account_id: other }, p.keyHeaders());
  const theirs = { authorization: `Bearer ${minted.body.result.value}` };
  assert.equal((await uploadScript(p, name, SCRIPT, {}, { accountId: other, headers: theirs })).status, 200);
  const opened = await p.api("POST", tails(name, other), {}, theirs);
  assert.equal(opened.status, 200, `the new owner tails its Worker: ${JSON.stringify(opened.body)}`);
  // The old sessions are gone: their ids join nothing.
  const status = await new Promise<number>((resolve) => {
    const c = new WebSocket(`ws://127.0.0.1:${new URL(p.url).port}/tail/v1/${mine[1]!.id}`, "trace-v1");
    c.once("unexpected-response", (_q, res) => resolve(res.statusCode ?? 0));
    c.once("open", () => resolve(101));
    c.once("error", () => undefined);
  });
  assert.equal(status, 404);
  // The new owner's session gets its own Worker's events.
  const theirWs = new WebSocket(opened.body.result.url, "trace-v1");
  const events: any[] = [];
  theirWs.on("message", (d: Buffer) => events.push(JSON.parse(d.toString())));
  await new Promise((resolve, reject) => {
    theirWs.once("open", resolve);
    theirWs.once("error", reject);
  });
  theirWs.send(JSON.stringify({ debug: false }));
  await eventually(
    async () => {
      await hit(p, name, "/next-owner");
      return events.some((e) => requestOf(e)?.url.endsWith("/next-owner"));
    },
    "the new owner's event",
    60_000,
  );
  theirWs.close();
  assert.equal((await p.api("DELETE", `/accounts/${other}/workers/scripts/${name}`, undefined, theirs)).status, 200);
});

test("stopping the platform ends an open tail session with close 1001 and finishes", HANG_GUARD, async () => {
  const { ws } = await openTail();
  const gone = new Promise<{ code: number; reason: string }>((resolve) => ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })));
  await p.stop(); // completes within the hang guard, or this test fails
  assert.deepEqual(await gone, { code: 1001, reason: "the platform is stopping" });
});
