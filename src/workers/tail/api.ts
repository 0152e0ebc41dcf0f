import type { FastifyInstance, FastifyRequest } from "fastify";
import { CoreErrors } from "../../core/errors.js";
import { ok } from "../../core/http/envelope.js";
import { parseUserJson } from "../../core/http/json-input.js";
import { parseWith } from "../../core/http/validate.js";
import { WorkersCodes, WorkersErrors } from "../errors.js";
import type { WorkersStore } from "../store.js";
import { tailFilters, tailFiltersBody } from "./events.js";
import { TAIL_PATH, type TailHub, type TailSession } from "./hub.js";
import { TailErrors } from "./errors.js";

export interface TailRouteDeps {
  store: WorkersStore;
  hub: TailHub;
  /** The node's id when the platform runs on several nodes (a tail then sees this node's invocations only). */
  distributedNode?: string;
}

type Params = { account_id: string; name: string; id?: string };

/** A code of the answer's messages: the tail sees one node's invocations. */
const PER_NODE = 10202;

/** The body of a POST: wrangler sends its JSON without a JSON content type, so it arrives as text. */
function filtersInput(body: unknown): unknown {
  if (typeof body !== "string") return body ?? {};
  if (body.trim() === "") return {};
  try {
    return parseUserJson(Buffer.from(body));
  } catch (e) {
    throw CoreErrors.malformedJson((e as Error).message);
  }
}

/** The session's WebSocket address, on the host the client reached the API on. */
function view(req: FastifyRequest, s: TailSession) {
  const scheme = req.protocol === "https" ? "wss" : "ws";
  return { id: s.id, url: `${scheme}://${req.headers.host}${TAIL_PATH}${s.id}`, expires_at: new Date(s.expiresAt).toISOString() };
}

/**
 * `POST/GET /accounts/{a}/workers/scripts/{name}/tails` and `DELETE …/tails/{id}`: live tail sessions, as the hosted
 * API (and `wrangler tail`) use them. Reading a script's logs is reading the script: `workers_read`.
 */
export function registerTailRoutes(app: FastifyInstance, deps: TailRouteDeps): void {
  const base = "/accounts/:account_id/workers/scripts/:name/tails";
  const read = { config: { permission: "workers_read" } } as const;
  const script = async (p: Params) => {
    if (!(await deps.store.get(p.account_id, p.name))) throw WorkersErrors.scriptNotFound();
  };
  app.post(base, read, async (req) => {
    const p = req.params as Params;
    const body = parseWith(tailFiltersBody, filtersInput(req.body), WorkersCodes.validation);
    await script(p);
    const session = await deps.hub.open(p.account_id, p.name, tailFilters(body, req.ip));
    const messages = deps.distributedNode
      ? [{ code: PER_NODE, message: `This tail shows the invocations served by the node that answered (${deps.distributedNode}), not those of other nodes` }]
      : [];
    return ok(view(req, session), undefined, messages);
  });
  app.get(base, read, async (req) => {
    const p = req.params as Params;
    await script(p);
    return ok(deps.hub.list(p.account_id, p.name).map((s) => view(req, s)));
  });
  app.delete(`${base}/:id`, read, async (req) => {
    const p = req.params as Params;
    if (!deps.hub.close(p.account_id, p.name, p.id!)) throw TailErrors.sessionNotFound();
    return ok(null);
  });
}
