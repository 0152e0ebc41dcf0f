import { randomBytes } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { parseCacheSettings, type SetCacheSettingsParameters } from "./action.js";
import { RulesErrors } from "./errors.js";
import { compileExpression } from "./expression/compiler.js";
import { ExpressionError } from "./expression/error.js";

/** The one phase built here: Cache Rules. */
export const PHASE = "http_request_cache_settings";
export const ACTION = "set_cache_settings";
/** The hosted limit on Cache Rules of a zone (the Enterprise plan's: Free 10, Pro 25, Business 50). */
export const MAX_RULES = 300;
/** Ours: the RE2 instructions all of a ruleset's `matches` patterns may take together (bounds a request's cost). */
export const MAX_RULESET_REGEX_INSTRUCTIONS = 1000;
const MAX_DESCRIPTION = 500;
const MAX_NAME = 256;

/** A rule as the hosted API answers it. */
export interface RuleView {
  id: string;
  version: string;
  action: typeof ACTION;
  action_parameters: SetCacheSettingsParameters;
  expression: string;
  description: string;
  enabled: boolean;
  ref: string;
  last_updated: string;
}

/** A zone's entry point ruleset of the phase, as the hosted API answers it. */
export interface RulesetView {
  id: string;
  name: string;
  description: string;
  kind: "zone";
  phase: typeof PHASE;
  version: string;
  last_updated: string;
  rules: RuleView[];
}

/** What a rule in a request sets (the rest the platform keeps: id, version, last_updated). */
export interface RuleInput {
  id?: string;
  ref?: string;
  expression: string;
  action_parameters: SetCacheSettingsParameters;
  description: string;
  enabled: boolean;
}

export const newId = () => randomBytes(16).toString("hex");
const ID = /^[0-9a-f]{32}$/;

type Json = Record<string, unknown>;

function objectOf(value: unknown, pointer: string): Json {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw RulesErrors.invalid(pointer || "/", "must be a JSON object");
  return value as Json;
}

function stringAt(value: unknown, pointer: string, max: number, min = 0): string {
  if (typeof value !== "string" || value.length < min || value.length > max)
    throw RulesErrors.invalid(pointer, `must be a string of ${min} to ${max} characters`);
  return value;
}

/** Read-only fields a client may send back as a GET answered them (read, modify, PUT): not settings, so not refused. */
const READ_ONLY_RULE_FIELDS = ["version", "last_updated"];
const RULE_FIELDS = ["id", "ref", "expression", "action", "action_parameters", "description", "enabled", ...READ_ONLY_RULE_FIELDS];

/**
 * One rule of a request, validated: the action and its parameters as built here, the expression parsed (refused with
 * its position; the compiler must be loaded: expression/compiler.ts). With a `base` (a PATCH), fields left out are taken from it; `position` is taken where a rule is added
 * or moved.
 */
export function parseRule(
  value: unknown,
  pointer: string,
  base?: RuleInput,
  opts: { position?: boolean } = {},
): { rule: RuleInput; regexInstructions: number } {
  const input = objectOf(value, pointer);
  for (const key of Object.keys(input))
    if (!RULE_FIELDS.includes(key) && !(opts.position && key === "position"))
      throw RulesErrors.notSupported(`${pointer}/${key.slice(0, 64)}`, `the rule field ${JSON.stringify(key.slice(0, 64))}`);
  if (input.action !== undefined || !base) {
    if (input.action !== ACTION) {
      if (typeof input.action !== "string") throw RulesErrors.invalid(`${pointer}/action`, `is required: "${ACTION}"`);
      throw RulesErrors.notSupported(
        `${pointer}/action`,
        `the action ${JSON.stringify(input.action.slice(0, 64))} (the phase ${PHASE} takes "${ACTION}" only)`,
      );
    }
  }
  const expression = input.expression === undefined && base ? base.expression : stringAt(input.expression, `${pointer}/expression`, Number.MAX_SAFE_INTEGER, 1);
  let regexInstructions: number;
  try {
    regexInstructions = compileExpression(expression).regexInstructions;
  } catch (err) {
    if (err instanceof ExpressionError) throw RulesErrors.expression(`${pointer}/expression`, err);
    throw err;
  }
  const rule: RuleInput = {
    expression,
    action_parameters:
      input.action_parameters === undefined
        ? base
          ? base.action_parameters
          : parseCacheSettings(undefined, `${pointer}/action_parameters`)
        : parseCacheSettings(input.action_parameters, `${pointer}/action_parameters`),
    description: input.description === undefined ? (base?.description ?? "") : stringAt(input.description, `${pointer}/description`, MAX_DESCRIPTION),
    enabled: input.enabled === undefined ? (base?.enabled ?? true) : booleanAt(input.enabled, `${pointer}/enabled`),
  };
  if (input.id !== undefined) rule.id = idAt(input.id, `${pointer}/id`);
  else if (base?.id) rule.id = base.id;
  if (input.ref !== undefined) rule.ref = stringAt(input.ref, `${pointer}/ref`, 64, 1);
  else if (base?.ref) rule.ref = base.ref;
  return { rule, regexInstructions };
}

function booleanAt(value: unknown, pointer: string): boolean {
  if (typeof value !== "boolean") throw RulesErrors.invalid(pointer, "must be true or false");
  return value;
}

function idAt(value: unknown, pointer: string): string {
  if (typeof value !== "string" || !ID.test(value)) throw RulesErrors.invalid(pointer, "must be a rule id (32 hexadecimal characters)");
  return value;
}

/** The body of a PUT of a whole ruleset (the entry point, or the ruleset by id): its rules, name and description. */
export interface RulesetInput {
  name?: string;
  description?: string;
  rules: RuleInput[];
}

/**
 * Parses a ruleset body. `kind` and `phase` may be sent (the SDK's create does) and must then be the ones built here;
 * an `id`, `version` or `last_updated` sent back from a GET is read-only and not taken.
 */
export function parseRuleset(value: unknown, opts: { requirePhase?: boolean } = {}): RulesetInput {
  const input = objectOf(value, "");
  for (const key of Object.keys(input))
    if (!["name", "description", "rules", "kind", "phase", "id", "version", "last_updated"].includes(key))
      throw RulesErrors.notSupported(`/${key.slice(0, 64)}`, `the ruleset field ${JSON.stringify(key.slice(0, 64))}`);
  if (input.kind !== undefined && input.kind !== "zone")
    throw RulesErrors.notSupported("/kind", `the kind ${JSON.stringify(String(input.kind).slice(0, 64))} (zone rulesets only)`);
  if (input.phase !== undefined || opts.requirePhase) {
    if (typeof input.phase !== "string") throw RulesErrors.invalid("/phase", `is required: "${PHASE}"`);
    if (input.phase !== PHASE) throw RulesErrors.phaseNotSupported(input.phase, "/phase");
  }
  const rules = input.rules ?? (opts.requirePhase ? [] : undefined);
  if (!Array.isArray(rules)) throw RulesErrors.invalid("/rules", "must be an array of rules");
  if (rules.length > MAX_RULES) throw RulesErrors.tooManyRules(rules.length, MAX_RULES);
  let regex = 0;
  const parsed = rules.map((r: unknown, i) => {
    const { rule, regexInstructions } = parseRule(r, `/rules/${i}`);
    regex += regexInstructions;
    return rule;
  });
  if (regex > MAX_RULESET_REGEX_INSTRUCTIONS) throw RulesErrors.regexBudget(regex, MAX_RULESET_REGEX_INSTRUCTIONS);
  const out: RulesetInput = { rules: parsed };
  if (input.name !== undefined) out.name = stringAt(input.name, "/name", MAX_NAME, 1);
  if (input.description !== undefined) out.description = stringAt(input.description, "/description", MAX_DESCRIPTION);
  return out;
}

/** The regular expressions of rules already parsed, together (for the ruleset's bound). */
export function regexInstructionsOf(rules: readonly RuleInput[]): number {
  let total = 0;
  for (const r of rules) total += compileExpression(r.expression).regexInstructions;
  return total;
}

/**
 * The ruleset after a change: the previous one's id, name and description unless given; a rule that names an id of
 * the previous ruleset keeps it, and keeps its version and time when nothing of it changed; a new rule gets an id.
 * The ruleset's version goes up by one on every change.
 */
export function nextRuleset(previous: RulesetView | undefined, input: RulesetInput, now: Date): RulesetView {
  const at = now.toISOString();
  const before = new Map((previous?.rules ?? []).map((r) => [r.id, r]));
  const seenIds = new Set<string>();
  const seenRefs = new Set<string>();
  const rules = input.rules.map((r, i): RuleView => {
    if (r.id !== undefined) {
      if (!before.has(r.id)) throw RulesErrors.invalid(`/rules/${i}/id`, "names no rule of this ruleset (leave id out for a new rule)");
      if (seenIds.has(r.id)) throw RulesErrors.invalid(`/rules/${i}/id`, "names a rule twice");
      seenIds.add(r.id);
    }
    const id = r.id ?? newId();
    const ref = r.ref ?? before.get(id)?.ref ?? id;
    if (seenRefs.has(ref)) throw RulesErrors.invalid(`/rules/${i}/ref`, "is the ref of another rule of the ruleset");
    seenRefs.add(ref);
    const old = before.get(id);
    const rule: RuleView = {
      id,
      version: "1",
      action: ACTION,
      action_parameters: r.action_parameters,
      expression: r.expression,
      description: r.description,
      enabled: r.enabled,
      ref,
      last_updated: at,
    };
    if (old) {
      const same =
        old.expression === rule.expression &&
        old.description === rule.description &&
        old.enabled === rule.enabled &&
        old.ref === rule.ref &&
        isDeepStrictEqual(old.action_parameters, rule.action_parameters);
      rule.version = same ? old.version : String(Number(old.version) + 1);
      if (same) rule.last_updated = old.last_updated;
    }
    return rule;
  });
  return {
    id: previous?.id ?? newId(),
    name: input.name ?? previous?.name ?? "default",
    description: input.description ?? previous?.description ?? "",
    kind: "zone",
    phase: PHASE,
    version: previous ? String(Number(previous.version) + 1) : "1",
    last_updated: at,
    rules,
  };
}

/** A rule of a stored ruleset as the input of the next change (its id kept). */
export const asInput = (r: RuleView): RuleInput => ({
  id: r.id,
  ref: r.ref,
  expression: r.expression,
  action_parameters: r.action_parameters,
  description: r.description,
  enabled: r.enabled,
});

/** Where a rule added or moved goes: `{index}` (1-based, as hosted), `{before: id}` or `{after: id}`; the end if absent. */
export function positionOf(value: unknown, rules: readonly RuleInput[], pointer = "/position"): number {
  if (value === undefined) return rules.length;
  const p = objectOf(value, pointer);
  const keys = Object.keys(p);
  if (keys.length !== 1 || !["index", "before", "after"].includes(keys[0]!)) throw RulesErrors.invalid(pointer, 'takes one of "index", "before" or "after"');
  if (p.index !== undefined) {
    if (typeof p.index !== "number" || !Number.isInteger(p.index) || p.index < 1 || p.index > rules.length + 1)
      throw RulesErrors.invalid(`${pointer}/index`, `must be a whole number from 1 to ${rules.length + 1}`);
    return p.index - 1;
  }
  const anchor = (p.before ?? p.after) as unknown;
  const at = rules.findIndex((r) => r.id === anchor);
  if (typeof anchor !== "string" || at < 0) throw RulesErrors.invalid(`${pointer}/${keys[0]}`, "names no rule of this ruleset");
  return p.before !== undefined ? at : at + 1;
}
