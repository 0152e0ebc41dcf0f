import { z } from "zod";

/** Gateway ids: lowercase words joined by single dashes, 1–64 characters (the hosted API's rule). */
const GATEWAY_ID_RE = /^[a-z0-9_]+(?:-[a-z0-9_]+)*$/;
const gatewayId = z.string().min(1).max(64).regex(GATEWAY_ID_RE, "must be lowercase letters, digits and _ joined by single dashes");

const nonNegInt = z.number().int().min(0);

/** Settings shared by create and PUT (PUT replaces them all). Cloudflare-only extras are accepted and kept. */
const gatewaySettings = z.object({
  cache_ttl: nonNegInt.nullable().transform((v) => v ?? 0),
  cache_invalidate_on_update: z.boolean(),
  collect_logs: z.boolean(),
  rate_limiting_interval: nonNegInt.nullable().transform((v) => v ?? 0),
  rate_limiting_limit: nonNegInt.nullable().transform((v) => v ?? 0),
  rate_limiting_technique: z
    .enum(["fixed", "sliding"])
    .nullable()
    .optional()
    .transform((v) => v ?? "fixed"),
  authentication: z.boolean().optional().default(false),
  log_management: z
    .number()
    .int()
    .min(10_000)
    .max(10_000_000)
    .nullable()
    .optional()
    .transform((v) => v ?? null),
  log_management_strategy: z
    .enum(["STOP_INSERTING", "DELETE_OLDEST"])
    .nullable()
    .optional()
    .transform((v) => v ?? null),
  retry_max_attempts: z
    .number()
    .int()
    .min(1)
    .max(5)
    .nullable()
    .optional()
    .transform((v) => v ?? null),
  retry_delay: z
    .number()
    .int()
    .min(0)
    .max(60_000)
    .nullable()
    .optional()
    .transform((v) => v ?? null),
  retry_backoff: z
    .enum(["constant", "linear", "exponential"])
    .nullable()
    .optional()
    .transform((v) => v ?? null),
  logpush: z.boolean().optional(),
  logpush_public_key: z.string().nullable().optional(),
  zdr: z.boolean().optional(),
  byok_only: z.boolean().optional(),
  store_id: z.string().nullable().optional(),
  workers_ai_billing_mode: z.string().optional(),
  log_classification: z.boolean().optional(),
  otel: z.array(z.record(z.string(), z.unknown())).nullable().optional(),
  dlp: z.record(z.string(), z.unknown()).nullable().optional(),
  guardrails: z.record(z.string(), z.unknown()).nullable().optional(),
  stripe: z.record(z.string(), z.unknown()).nullable().optional(),
});

export const createGatewayBody = gatewaySettings.extend({ id: gatewayId });
/** PUT may repeat the id (clients send the whole object), but cannot change it. */
export const updateGatewayBody = gatewaySettings.extend({ id: z.string().optional() });

export type GatewaySettings = z.output<typeof gatewaySettings>;
