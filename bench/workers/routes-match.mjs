// Routes lookup benchmark: the in-memory index the edge port asks for every request outside the workers domain
// (src/workers/routing/pattern.ts), with 10,000 exact-host routes, 100 wildcard ones and a Custom Domain, asked for
// a routed host, a wildcard one, an unrouted one (an API request's 127.0.0.1) and the domain in turn.
// Run: node bench/workers/routes-match.mjs after `npm run build`.
import { parsePattern, RouteIndex } from "../../dist/workers/routing/pattern.js";

const routes = [];
for (let i = 0; i < 10_000; i++) routes.push({ pattern: parsePattern(`app${i}.zone${i % 100}.example/api/*`), target: { accountId: "a", script: `s${i}` } });
for (let i = 0; i < 100; i++) routes.push({ pattern: parsePattern(`*.zone${i}.example/*`), target: { accountId: "a", script: `w${i}` } });
const index = new RouteIndex(routes, [{ hostname: "shop.zone1.example", target: { accountId: "a", script: "d" } }]);
const hosts = ["app5.zone5.example:8787", "x.y.zone7.example", "127.0.0.1:8787", "shop.zone1.example"];
const N = 2_000_000;
for (let i = 0; i < 100_000; i++) index.match(hosts[i & 3], "/api/v1?x=1"); // warm-up
let hits = 0;
const start = process.hrtime.bigint();
for (let i = 0; i < N; i++) if (index.match(hosts[i & 3], "/api/v1?x=1")) hits++;
const nsPerMatch = Number(process.hrtime.bigint() - start) / N;
console.log(JSON.stringify({ routes: routes.length, nsPerMatch: Number(nsPerMatch.toFixed(1)), hits }));
