import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { parseWith } from "../core/http/validate.js";
import { AnalyticsCodes } from "./errors.js";
import type { AnalyticsSchema } from "./schema.js";

/** A GraphQL request body; this platform's own bound on the query's length (the token bound is schema.ts's). */
const requestSchema = z.object({
  query: z
    .string()
    .min(1)
    .max(64 * 1024),
  variables: z.record(z.string(), z.unknown()).nullish(),
  operationName: z.string().max(256).nullish(),
});

/**
 * `POST /client/v4/graphql`, the hosted GraphQL Analytics API (what `wrangler r2 bucket info` asks for a bucket's
 * size). Authenticated as the rest of the v4 API; which accounts and datasets the caller may read is checked per
 * field (schema.ts), as a query names its account inside. `schema` is made in the background after the start, or by the first query if that comes first (service.ts). The answer is GraphQL's `{data, errors}`, not the v4 envelope.
 */
export function registerAnalyticsRoutes(app: FastifyInstance, schema: () => Promise<AnalyticsSchema>): void {
  app.post("/graphql", { config: { permission: "self" } }, async (req) => {
    const body = parseWith(requestSchema, req.body ?? {}, AnalyticsCodes.invalidRequest);
    const p = req.principal;
    return (await schema()).run(
      { query: body.query, variables: body.variables ?? undefined, operationName: body.operationName ?? undefined },
      { sees: (accountId) => p.accounts().includes(accountId), can: (accountId, permission) => p.can(accountId, permission) },
    );
  });
}
