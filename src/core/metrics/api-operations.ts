import type { onRequestHookHandler } from "fastify";
import type { OperationMetrics } from "./operations.js";

/**
 * Route options that count a v4 API route as an operation of its data area (`via="api"`), in the same metrics as
 * the binding's operations: `{ ...edit, ...apiOperation(metrics, "put") }`. The count starts in the route's own
 * onRequest hook, before the body is read, so the request's body bytes are counted as the binding's are; a request
 * refused before it (no valid credentials) is not an operation and is not counted, one refused by the permission
 * check after it is (`outcome="error"`).
 */
export function apiOperation(metrics: OperationMetrics | undefined, op: string): { onRequest?: onRequestHookHandler } {
  if (!metrics) return {};
  return {
    onRequest: (req, reply, done) => {
      metrics.track(op, "api", req.raw, reply.raw);
      done();
    },
  };
}
