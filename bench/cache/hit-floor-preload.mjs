// Preloaded (`node --import`) into the `platform` path of bench/cache/hit-floors.mjs: a copy of the built platform
// whose edge listener first offers each request to globalThis.__benchHitFloor. Requests for the bench's host are
// answered there as the `head` floor answers them (the edge's HIT head, a fixed 1 KiB body), before any of the
// platform's per-request code runs; every other request (the v4 API the bench sets up with) goes on as usual. What it
// measures: the platform's process itself (its heap, its other work, Node's internals as the platform leaves them),
// with nothing of ours on the request's path.
import { handlerFor } from "./hit-floor-server.mjs";

const handler = handlerFor("head", process.env.BENCH_HIT_FLOOR_HEAD);
const host = process.env.BENCH_HIT_FLOOR_HOST;
globalThis.__benchHitFloor = (req, res) => {
  if (req.headers.host !== host) return false;
  handler(req, res);
  return true;
};
