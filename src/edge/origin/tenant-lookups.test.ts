import assert from "node:assert/strict";
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { setMaxListeners } from "node:events";
import { after, before, describe, it } from "node:test";
import * as dnsPacket from "dns-packet";
import { request } from "undici";
import { runCli, startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { eventually } from "../../core/testing/eventually.js";
import { createAccount, hit, startPlatform, uploadScript } from "../../workers/testing/helpers.js";
import { loopbackBlock, startOrigin } from "../testing/origins.js";
import { readOriginConfig } from "./config.js";
import { LOOKUPS_PER_ACCOUNT, QUEUED_PER_ACCOUNT, TenantResolver } from "./tenant-resolver.js";

const under = (name: string, domain: string) => name === domain || name.endsWith(`.${domain}`);

/**
 * A name server on loopback standing in for the operator's recursive resolver: names under `answered` get `address`
 * (A; AAAA is answered empty); queries for names under `dead` are received, counted and never answered, as a resolver
 * waiting on a domain whose name servers never answer; any other name does not exist (NXDOMAIN).
 */
async function startNameServer(
  answeredDomain: string,
  address: string,
  dead: string,
): Promise<{ server: string; unanswered: () => number; answered: () => number; close: () => void }> {
  const socket: UdpSocket = createSocket("udp4");
  let unanswered = 0;
  let answered = 0;
  socket.on("message", (msg, rinfo) => {
    let query: dnsPacket.Packet;
    try {
      query = dnsPacket.decode(msg);
    } catch {
      return;
    }
    const q = query.questions?.[0];
    if (!q) return;
    if (under(q.name, dead)) return void unanswered++;
    const known = under(q.name, answeredDomain);
    const answers: dnsPacket.Answer[] = known && q.type === "A" ? [{ type: "A", name: q.name, ttl: 60, class: "IN", data: address }] : [];
    const nxdomain = known ? 0 : 3;
    const flags = dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | nxdomain;
    const reply = dnsPacket.encode({ type: "response", id: query.id, flags, questions: [q], answers });
    answered++;
    socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  return { server: `127.0.0.1:${socket.address().port}`, unanswered: () => unanswered, answered: () => answered, close: () => socket.close() };
}

/**
 * Account A's Worker (`scriptA`) asked for more outside names that never answer than its allowance and queue hold:
 * those past the queue fail at once (599 from the script), the others wait; meanwhile account B's Worker (`scriptB`)
 * gets its names looked up and answered (to loopback, which a Worker may not reach: 599 once resolved).
 */
async function floodAThenAskB(p: TestPlatform, ns: Awaited<ReturnType<typeof startNameServer>>, scriptA: string, scriptB: string): Promise<void> {
  const total = LOOKUPS_PER_ACCOUNT + QUEUED_PER_ACCOUNT + 5;
  const answersA: number[] = [];
  const leave = new AbortController();
  setMaxListeners(total, leave.signal);
  const port = new URL(p.url).port;
  const requestsA = Array.from({ length: total }, (_, i) =>
    request(`http://127.0.0.1:${port}/?n=${i}`, { headers: { host: `${scriptA}.workers.localhost:${port}` }, signal: leave.signal }).then(
      async (r) => void answersA.push((await r.body.text(), r.statusCode)),
    ),
  );
  await eventually(() => ns.unanswered() >= 2 * LOOKUPS_PER_ACCOUNT, "account A's queries at the name server", 60_000);
  await eventually(() => answersA.length === 5, "account A's requests past its queue to fail", 60_000);
  assert.deepEqual(answersA, Array(5).fill(599));
  const answeredBefore = ns.answered();
  for (let i = 0; i < 3; i++) {
    const r = await hit(p, scriptB, `/?n=${i}`);
    // Looked up under B's allowance (the name server answered it) to loopback, which a Worker may not reach. Under one
    // shared allowance, A's full queue would have refused it with no query sent.
    assert.equal(r.status, 599, r.text);
  }
  assert.ok(ns.answered() >= answeredBefore + 3, "account B's names were looked up and answered");
  assert.equal(answersA.length, 5, "account A's other requests are still waiting on their lookups");
  leave.abort();
  await Promise.allSettled(requestsA);
}

describe("one tenant's names that never resolve do not stall another tenant's lookups", () => {
  it("TenantResolver: an account's lookups past its allowance and queue find nothing at once; another account's resolve meanwhile", async () => {
    const ns = await startNameServer("outside-b.test", "192.0.2.7", "dead-a.test");
    try {
      const resolver = new TenantResolver([ns.server], 20_000);
      let settledA = 0;
      const lookupsA = Array.from({ length: LOOKUPS_PER_ACCOUNT + QUEUED_PER_ACCOUNT + 5 }, (_, i) =>
        resolver.addresses("account-a", `n${i}.dead-a.test`).then((found) => {
          settledA++;
          return found;
        }),
      );
      // The 5 beyond the allowance and the queue fail at once, with no query sent for them.
      await eventually(() => settledA === 5, "the lookups past the queue to fail");
      for (const found of await Promise.all(lookupsA.slice(-5))) assert.deepEqual(found, []);
      // Only the allowance's queries reach the name server (A and AAAA each); the queued ones are not sent yet.
      await eventually(() => ns.unanswered() >= 2 * LOOKUPS_PER_ACCOUNT, "account A's queries at the name server");
      assert.deepEqual(await resolver.addresses("account-b", "www.outside-b.test"), ["192.0.2.7"]);
      assert.equal(settledA, 5, "account A's lookups still pending when account B's resolved");
      // The answer is kept for its TTL (60 s here): asked again, by any account, no query goes out.
      const answered = ns.answered();
      assert.deepEqual(await resolver.addresses("account-b", "www.outside-b.test"), ["192.0.2.7"]);
      assert.deepEqual(await resolver.addresses("account-c", "www.outside-b.test"), ["192.0.2.7"]);
      assert.equal(ns.answered(), answered, "no query for an answer kept");
      // /etc/hosts is not read for tenants' names: localhost is asked of the name server, which says it does not exist.
      assert.deepEqual(await resolver.addresses("account-b", "localhost"), []);
    } finally {
      ns.close();
    }
  });

  it("--origin-resolver takes addresses with or without a port, refuses names and bad ports, and is in serve --help", async () => {
    const read = (servers: string[]) =>
      readOriginConfig({
        "origin-allow": undefined,
        "origin-ca-file": undefined,
        "origin-resolver": servers,
        "origin-timeout": 100,
        "origin-connect-timeout": 15,
      });
    assert.deepEqual(read([]).originResolvers, []);
    assert.deepEqual(read(["10.0.0.53, 10.0.0.54:5353", "[2001:db8::53]:53", "2001:db8::54"]).originResolvers, [
      "10.0.0.53",
      "10.0.0.54:5353",
      "[2001:db8::53]:53",
      "2001:db8::54",
    ]);
    for (const bad of ["ns.example", "10.0.0.53:0", "10.0.0.53:65536", "[10.0.0.53", "2001:db8::53:53x"]) {
      assert.throws(
        () => read([bad]),
        (err: Error) => err.message.includes(`--origin-resolver: "${bad}"`),
        bad,
      );
    }
    const help = await runCli(["serve", "--help"]);
    assert.match(help.stdout, /--origin-resolver\s[\s\S]*?\/etc\/hosts is never read/);
  });

  describe("through the edge: proxied CNAMEs to names outside our zones", () => {
    const addr = loopbackBlock();
    let p: TestPlatform;
    let ns: Awaited<ReturnType<typeof startNameServer>>;
    let port: number;
    const cleanups: (() => unknown)[] = [];
    const hooks = { after: (fn: () => unknown) => void cleanups.push(fn) };
    const post = async (host: string, path: string, signal?: AbortSignal) => {
      const res = await request(`http://127.0.0.1:${port}${path}`, { method: "POST", headers: { host }, signal });
      return { status: res.statusCode, text: await res.body.text() };
    };

    before(async () => {
      await startOrigin(hooks, { address: addr(2), name: "b" });
      ns = await startNameServer("outside-b.test", addr(2), "dead-a.test");
      // A long connect timeout: account A's lookups stay pending for the whole test.
      p = await startTestPlatform({ args: ["--origin-allow", "127.0.0.0/8", "--origin-connect-timeout", "60", "--origin-resolver", ns.server] });
      port = Number(new URL(p.url).port);
      const zoneA = (await p.api("POST", "/zones", { name: "lookups-a.example", account: { id: p.accountId } })).body.result.id;
      const r1 = await p.api("POST", `/zones/${zoneA}/dns_records`, { type: "CNAME", name: "www", content: "never.dead-a.test", proxied: true });
      assert.equal(r1.status, 200, JSON.stringify(r1.body));
      const accountB = await createAccount(p, "lookups-b");
      const zoneB = (await p.api("POST", "/zones", { name: "lookups-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
      const r2 = await p.api(
        "POST",
        `/zones/${zoneB}/dns_records`,
        { type: "CNAME", name: "www", content: "www.outside-b.test", proxied: true },
        p.keyHeaders(),
      );
      assert.equal(r2.status, 200, JSON.stringify(r2.body));
    });
    after(async () => {
      await p?.dispose();
      ns?.close();
      for (const fn of cleanups) await fn();
    });

    it("account A's many requests wait on a name that never answers; account B's are served meanwhile, and A's past its queue get 523 at once", async () => {
      const total = LOOKUPS_PER_ACCOUNT + QUEUED_PER_ACCOUNT + 10;
      const answersA: number[] = [];
      const leave = new AbortController();
      setMaxListeners(total, leave.signal);
      const requestsA = Array.from({ length: total }, (_, i) =>
        post("www.lookups-a.example", `/a/${i}`, leave.signal).then((r) => void answersA.push(r.status)),
      );
      // A's lookups are in flight (the name server got their queries), and those past the queue were answered 523.
      await eventually(() => ns.unanswered() >= 2 * LOOKUPS_PER_ACCOUNT, "account A's queries at the name server", 30_000);
      await eventually(() => answersA.length === 10, "account A's requests past its queue to be answered", 30_000);
      assert.deepEqual(answersA, Array(10).fill(523));
      for (let i = 0; i < 5; i++) {
        const r = await post("www.lookups-b.example", `/echo?i=${i}`);
        assert.equal(r.status, 200, r.text);
        assert.equal(JSON.parse(r.text).origin, "b");
      }
      assert.equal(answersA.length, 10, "account A's other requests are still waiting on their lookups");
      // A's clients leave (the edge's port need not wait for their lookups when the platform stops).
      leave.abort();
      await Promise.allSettled(requestsA);
    });
  });

  // A Worker of each account opening a socket (connect()) or fetching (fetch()) a name outside our zones: account B's
  // names resolve to loopback, which a Worker may reach neither way, so its script answers 599 once resolved.
  const connector = (host: string) =>
    `import { connect } from "cloudflare:sockets";
    export default { async fetch(request) {
      const n = new URL(request.url).searchParams.get("n") ?? "0";
      try {
        const socket = connect({ hostname: ${JSON.stringify(host)}.replace("N", n), port: 80 });
        await socket.opened;
        return new Response("opened");
      } catch (e) { return new Response("connect failed", { status: 599 }); }
    } };`;
  const fetcher = (host: string) =>
    `export default { async fetch(request) {
      const n = new URL(request.url).searchParams.get("n") ?? "0";
      try { await fetch("http://" + ${JSON.stringify(host)}.replace("N", n) + "/"); return new Response("reached"); }
      catch (e) { return new Response("fetch failed", { status: 599 }); }
    } };`;
  for (const c of [
    {
      suite: "through Workers: connect() to names outside our zones, per account",
      title: "account A's Worker opening sockets to names that never resolve fills A's allowance only: account B's Worker's connect() lookups are answered",
      script: connector,
      names: ["lookups-ca", "lookups-cb"],
    },
    {
      suite: "through Workers: fetch() to names outside our zones",
      title: "account A's Worker fetching names that never resolve does not hold account B's Worker's lookups",
      script: fetcher,
      names: ["lookups-wa", "lookups-wb"],
    },
  ]) {
    describe(c.suite, () => {
      let p: TestPlatform;
      let ns: Awaited<ReturnType<typeof startNameServer>>;
      const [scriptA, scriptB] = c.names as [string, string];

      before(async () => {
        ns = await startNameServer("outside-b.test", "127.0.0.1", "dead-a.test");
        p = await startPlatform(["--origin-connect-timeout", "60", "--origin-resolver", ns.server]);
        assert.equal((await uploadScript(p, scriptA, c.script("nN.dead-a.test"))).status, 200);
        const accountB = await createAccount(p, scriptB);
        const up = await uploadScript(p, scriptB, c.script("wwwN.outside-b.test"), {}, { accountId: accountB, headers: p.keyHeaders() });
        assert.equal(up.status, 200, JSON.stringify(up.body));
      });
      after(async () => {
        await p?.dispose();
        ns?.close();
      });

      it(c.title, async () => {
        await floodAThenAskB(p, ns, scriptA, scriptB);
      });
    });
  }
});
