import { z } from "zod";
import { CoreErrors } from "../../core/errors.js";
import { parseWith } from "../../core/http/validate.js";
import { WorkersCodes, WorkersErrors, WorkersMessages } from "../errors.js";
import { parseObservability, type ObservabilitySetting } from "../logs/settings.js";

/**
 * The per-script settings of the hosted API that this platform does not have. None can be turned on, so each is
 * reported as off, and a request to turn one on is refused naming the field, never accepted and ignored.
 * (`observability` is a setting it has: Workers Logs, logs/settings.ts.)
 */
export const SCRIPT_SETTINGS = { logpush: false, tail_consumers: [] } as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The hosted bounds of a script's tags: at most 8, each a non-empty string (this platform bounds its length). */
export const TagLimits = { tags: 8, chars: 256 } as const;

const tagsSchema = z
  .array(z.string().min(1).max(TagLimits.chars))
  .max(TagLimits.tags)
  .refine((tags) => new Set(tags).size === tags.length, { message: "each tag may be given once" });

/**
 * Checks a `PATCH …/script-settings` body (what `wrangler deploy` sends: `observability: {enabled: false}`, and wrangler
 * 4 its service and environment `tags`) and returns the tags to store, when it names them.
 */
export function checkScriptSettings(body: unknown): { tags?: string[]; observability?: ObservabilitySetting } {
  if (!isObject(body)) throw CoreErrors.invalidInput("script settings must be a JSON object", { code: WorkersCodes.validation });
  let tags: string[] | undefined;
  let observability: ObservabilitySetting | undefined;
  for (const [field, value] of Object.entries(body)) {
    if (field === "observability") {
      observability = parseObservability(value);
      continue;
    }
    if (field === "tags") {
      // null leaves the tags as they are, as an absent field does.
      if (value !== null) tags = parseWith(z.object({ tags: tagsSchema }), { tags: value }, WorkersCodes.validation).tags;
      continue;
    }
    if (!checkSettingOff(field, value)) {
      throw WorkersErrors.settingUnavailable(
        field,
        "not a script setting of this platform (it has tags and observability, and logpush and tail_consumers, both off)",
      );
    }
  }
  return { ...(tags !== undefined && { tags }), ...(observability !== undefined && { observability }) };
}

/**
 * Checks the settings an upload's metadata may carry (wrangler puts `logpush`, `tail_consumers`, `observability`,
 * `placement` and `limits` there when the config has them): each is accepted off and refused on, like the
 * script-settings PATCH, so a Worker uploaded with Smart Placement on is not deployed as if it had it. `observability`
 * is read (Workers Logs): its setting, when the metadata has one.
 */
export function checkUploadSettings(meta: Record<string, unknown>): { observability?: ObservabilitySetting } {
  let observability: ObservabilitySetting | undefined;
  for (const [field, value] of Object.entries(meta)) {
    if (field === "observability" && value !== undefined) {
      observability = parseObservability(value);
      continue;
    }
    if (value === undefined || checkSettingOff(field, value)) continue;
    if (field === "placement" && value !== null && !(isObject(value) && (value.mode === undefined || value.mode === "off"))) {
      throw WorkersErrors.settingUnavailable(
        "placement.mode",
        'this platform has no Smart Placement (a Worker runs where it is called); only "off" is accepted',
      );
    }
    if (field === "limits" && value !== null && !(isObject(value) && Object.keys(value).length === 0)) {
      throw WorkersErrors.settingUnavailable("limits", "this platform does not enforce per-Worker CPU limits; leave limits out");
    }
  }
  return observability === undefined ? {} : { observability };
}

/** Checks one of the settings this platform has only off; false when `field` is not one of them. */
function checkSettingOff(field: string, value: unknown): boolean {
  switch (field) {
    case "logpush":
      if (value !== false) throw WorkersErrors.settingUnavailable("logpush", "this platform has no Logpush; only false is accepted");
      return true;
    case "tail_consumers":
      if (value !== null && !(Array.isArray(value) && value.length === 0)) {
        throw WorkersErrors.settingUnavailable("tail_consumers", "this platform has no Tail Workers; only [] is accepted");
      }
      return true;
    default:
      return false;
  }
}

/** What `…/subdomain` of a script says: whether it is served at `<name>.<workers domain>`; there are no preview URLs. */
export const subdomainState = (enabled: boolean) => ({ enabled, previews_enabled: false }) as const;

/**
 * Checks a `POST …/subdomain` body and returns the answer's messages and the `enabled` asked for, if any (turning the
 * Worker's URL off is what wrangler asks for a Worker deployed with routes and without `workers_dev = true`).
 * `previews_enabled: true` is what wrangler 3 sends on every deploy by default (`preview_urls` defaults to true):
 * refusing it would fail every deploy after its upload, so it is answered with previews off and a message saying so.
 */
export function checkSubdomainChange(body: unknown): { messages: { code: number; message: string }[]; enabled?: boolean } {
  if (!isObject(body)) throw CoreErrors.invalidInput('the body must be a JSON object such as {"enabled": true}', { code: WorkersCodes.validation });
  const messages = [];
  let enabled: boolean | undefined;
  for (const [field, value] of Object.entries(body)) {
    if (typeof value !== "boolean") throw CoreErrors.invalidInput(`${field}: must be true or false`, { code: WorkersCodes.validation, pointer: `/${field}` });
    if (field === "enabled") {
      enabled = value;
    } else if (field === "previews_enabled") {
      if (value)
        messages.push(
          WorkersMessages.leftUnchanged("previews_enabled", "this platform has no preview URLs (it serves one version per Worker, at its URL); they stay off"),
        );
    } else {
      throw WorkersErrors.settingUnavailable(field, "not a subdomain setting (they are enabled and previews_enabled)");
    }
  }
  return { messages, enabled };
}
