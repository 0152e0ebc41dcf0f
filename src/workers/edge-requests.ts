import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../core/logger.js";
import type { WorkerAssets } from "./assets/assets.js";
import type { WorkerProxy } from "./runtime/proxy.js";
import type { WorkersRuntime } from "./runtime/runtime.js";

/**
 * Serves an edge request for a Worker (false when the request is for none): static assets are answered before the
 * Worker (assets/assets.ts says when), the rest goes to the Worker's workerd.
 */
export function edgeRequestHandler(
  edgeScript: (req: IncomingMessage) => string | undefined,
  runtime: WorkersRuntime,
  proxy: WorkerProxy,
  assets: WorkerAssets,
  log: Logger,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const name = edgeScript(req);
    if (!name) return false;
    if (!runtime.lookup(name)) {
      proxy.serve(name, req, res);
      return true;
    }
    const failed = (err: unknown) => {
      log.error({ err, script: name }, "serving static assets failed");
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    };
    try {
      // Answered in this turn when the live version's assets are known (the usual case), else once they are read.
      assets.serveEdge(name, req, res, runtime.handlersOf(name), () => proxy.serve(name, req, res))?.catch(failed);
    } catch (err) {
      failed(err);
    }
    return true;
  };
}
