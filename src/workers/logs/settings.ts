import { z } from "zod";
import { LogsErrors } from "./errors.js";

/**
 * A Worker's `observability` setting, as wrangler sends it (its config's `[observability]` table, in the upload's
 * metadata and in `PATCH …/script-settings`): kept as given, and shown again by `GET …/script-settings`.
 */
export interface ObservabilitySetting {
  enabled: boolean;
  head_sampling_rate?: number;
  logs?: { enabled?: boolean; head_sampling_rate?: number; invocation_logs?: boolean; persist?: boolean; destinations?: string[] };
  traces?: { enabled?: boolean; head_sampling_rate?: number; persist?: boolean; destinations?: string[] };
}

/** What the platform does with a Worker's setting: whether it keeps logs, which share of invocations, and their own lines. */
export interface LogsPolicy {
  /** Logs are kept (observability or its logs turned on, and persisted). */
  keep: boolean;
  /** The share of invocations kept, from 0 to 1 (`logs.head_sampling_rate`, else `head_sampling_rate`, else 1). */
  rate: number;
  /** The invocation's own event is kept beside its console lines (`logs.invocation_logs`, true unless false). */
  invocationLogs: boolean;
}

export const OBSERVABILITY_OFF: ObservabilitySetting = { enabled: false };

const rate = z.number().min(0).max(1);
const noDestinations = z.array(z.string()).max(0, { message: "this platform has no log destinations (the logs are kept here); only [] is accepted" });
const schema = z.strictObject({
  enabled: z.boolean().optional(),
  head_sampling_rate: rate.optional(),
  logs: z
    .strictObject({
      enabled: z.boolean().optional(),
      head_sampling_rate: rate.optional(),
      invocation_logs: z.boolean().optional(),
      persist: z.boolean().optional(),
      destinations: noDestinations.optional(),
    })
    .optional(),
  traces: z
    .strictObject({
      enabled: z.literal(false, { message: "this platform has no Workers traces; only false is accepted" }).optional(),
      head_sampling_rate: rate.optional(),
      persist: z.boolean().optional(),
      destinations: noDestinations.optional(),
    })
    .optional(),
});

/** Checks an `observability` value; a field this platform does not know or cannot do is refused, naming it. */
export function parseObservability(value: unknown): ObservabilitySetting {
  if (value === null) return OBSERVABILITY_OFF;
  const r = schema.safeParse(value);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const path = issue.path.join(".");
    if (issue.code === "unrecognized_keys") throw LogsErrors.setting([path, issue.keys[0]].filter(Boolean).join("."), "not a field of observability here");
    throw LogsErrors.setting(path || "enabled", issue.message);
  }
  const v = r.data;
  return { ...v, enabled: v.enabled ?? false };
}

/** What is kept of a Worker's invocations under `s` (wrangler's reading: logs are on when `logs.enabled`, or when `enabled` and logs not turned off). */
export function policyOf(s: ObservabilitySetting): LogsPolicy {
  const on = s.logs?.enabled ?? s.enabled;
  return {
    keep: on && s.logs?.persist !== false,
    rate: s.logs?.head_sampling_rate ?? s.head_sampling_rate ?? 1,
    invocationLogs: s.logs?.invocation_logs !== false,
  };
}
