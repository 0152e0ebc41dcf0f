import type { IncomingMessage } from "node:http";
import type { Registry } from "prom-client";
import { OperationMetrics } from "../core/metrics/operations.js";

/**
 * KV's operations: as its binding protocol names them (kv/binding.ts), and the v4 API's on keys and values
 * (kv/routes.ts): the same names where they do the same, plus `metadata` (a key's metadata alone), `bulk_put` and
 * `bulk_delete`, which only the API has.
 */
const KV_OPERATIONS = new Set(["get", "put", "delete", "list", "bulk_get", "metadata", "bulk_put", "bulk_delete"]);

/** edgeplatform_kv_operations_total and edgeplatform_kv_bytes_total (core/metrics/operations.ts). */
export const kvOperationMetrics = (registry: Registry) => new OperationMetrics(registry, "kv", KV_OPERATIONS);

/** The operation a binding call asks for, from its method and path (as kv/binding.ts dispatches). */
export function kvBindingOperation(req: IncomingMessage): string {
  const path = (req.url ?? "/").split("?")[0];
  if (path === "/" && req.method === "GET") return "list";
  if (path === "/bulk/get" && req.method === "POST") return "bulk_get";
  return req.method === "GET" ? "get" : req.method === "PUT" ? "put" : req.method === "DELETE" ? "delete" : "other";
}
