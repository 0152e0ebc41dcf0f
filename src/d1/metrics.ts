import type { IncomingMessage } from "node:http";
import type { Registry } from "prom-client";
import { OperationMetrics } from "../core/metrics/operations.js";

/**
 * D1's binding calls (d1/binding.ts): `query` (prepared statements, batches) and `execute` (exec()); and the v4
 * API's (d1/routes.ts): `query` (`/query` and `/raw`), `export`, `import`.
 */
const D1_OPERATIONS = new Set(["query", "execute", "export", "import"]);

/** edgeplatform_d1_operations_total and edgeplatform_d1_bytes_total (core/metrics/operations.ts). */
export const d1OperationMetrics = (registry: Registry) => new OperationMetrics(registry, "d1", D1_OPERATIONS);

export function d1BindingOperation(req: IncomingMessage): string {
  const path = (req.url ?? "/").split("?")[0];
  return path === "/query" ? "query" : path === "/execute" ? "execute" : "other";
}
