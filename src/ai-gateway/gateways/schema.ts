import { z } from "zod";

/** Gateway ids: lowercase words joined by single dashes, 1–64 characters (the hosted API's rule). */
const GATEWAY_ID_RE = /^[a-z0-9_]+(?:-[a-z0-9_]+)*$/;
const gatewayId = z.string().min(1).max(64).regex(GATEWAY_ID_RE, "must be lowercase letters, digits and _ joined by single dashes");

const nonNegInt = z.number().int().min(0);

/** The refusal of a hosted-gateway feature this platform does not have (zod adds the field's name in front). */
const unsupported = (feature: string, off: string) => ({
  message: `${feature} is not supported here; only ${off} is accepted`,
});

/** Guardrails screen something when any category of the prompt or the response has an action (FLAG or BLOCK). */
const screensAnything = (g: Record<string, unknown>): boolean =>
  ["prompt", "response"].some((side) => {
    const categories = g[side];
    return typeof categories === "object" && categories !== null && Object.values(categories).some((action) => action != null);
  });

/** Settings shared by create and PUT (PUT replaces them all). The hosted gateway's other fields are kept while they are off. */
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
  // The hosted gateway's features this platform does not have: each is accepted while it is off (absent, null or
  // the value that turns it off, which is what the cloudflare SDK and Terraform send by default) and refused when a
  // request turns it on, so nobody believes their traffic is screened, exported or billed elsewhere when it is not.
  logpush: z
    .boolean()
    .optional()
    .refine((v): boolean => v !== true, unsupported("Logpush", "false")),
  /** Only a key for Logpush's encryption; without Logpush it does nothing and claims nothing. */
  logpush_public_key: z.string().max(10_000).nullable().optional(),
  zdr: z
    .boolean()
    .optional()
    .refine((v): boolean => v !== true, unsupported("Zero Data Retention routing", "false")),
  /** Every request here already uses the caller's own provider credentials and there is no Unified Billing to fall back to. */
  byok_only: z.boolean().optional(),
  store_id: z
    .string()
    .nullable()
    .optional()
    .refine((v): boolean => v == null, unsupported("A Secrets Store (store provider keys with provider_configs instead)", "null")),
  workers_ai_billing_mode: z
    .enum(["postpaid", "unified"])
    .optional()
    .refine((v): boolean => v !== "unified", unsupported("Unified Billing", '"postpaid"')),
  log_classification: z
    .boolean()
    .optional()
    .refine((v): boolean => v !== true, unsupported("Log classification", "false")),
  otel: z
    .array(z.record(z.string(), z.unknown()))
    .nullable()
    .optional()
    .refine((v): boolean => !v?.length, unsupported("OpenTelemetry export", "null or []")),
  dlp: z
    .record(z.string(), z.unknown())
    .nullable()
    .optional()
    .refine((v): boolean => v == null || v.enabled === false, unsupported("Data Loss Prevention", "null or {enabled: false}")),
  guardrails: z
    .record(z.string(), z.unknown())
    .nullable()
    .optional()
    .refine((v): boolean => v == null || !screensAnything(v), unsupported("Guardrails", "null or no category set")),
  stripe: z
    .record(z.string(), z.unknown())
    .nullable()
    .optional()
    .refine((v): boolean => v == null, unsupported("Stripe usage events", "null")),
  spend_limits: z
    .record(z.string(), z.unknown())
    .nullable()
    .optional()
    .refine((v): boolean => v == null || v.enabled !== true, unsupported("Spend limits", "null or {enabled: false}")),
});

export const createGatewayBody = gatewaySettings.extend({ id: gatewayId });
/** PUT may repeat the id (clients send the whole object), but cannot change it. */
export const updateGatewayBody = gatewaySettings.extend({ id: z.string().optional() });

export type GatewaySettings = z.output<typeof gatewaySettings>;
