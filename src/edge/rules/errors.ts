import { EdgeError } from "../../core/errors.js";
import type { ExpressionError } from "./expression/error.js";

/**
 * Cache Rules' codes: the hosted Rulesets API's 10003 for a phase without an entry point ruleset (and, here, any
 * ruleset or rule not found), 20021 for a ruleset or rule it refuses (the hosted code of an invalid rule), 1001 for an
 * unknown zone as the other zone APIs answer it.
 */
export const RulesCodes = {
  zoneNotFound: 1001,
  notFound: 10003,
  invalid: 20021,
  conflict: 10009,
} as const;

/** Cache Rules' refusals; every message is written here once. */
export const RulesErrors = {
  zoneNotFound: () => new EdgeError(404, RulesCodes.zoneNotFound, "Invalid zone identifier"),
  noEntrypoint: (phase: string) => new EdgeError(404, RulesCodes.notFound, `could not find entrypoint ruleset in the ${phase} phase`),
  rulesetNotFound: (id: string) => new EdgeError(404, RulesCodes.notFound, `could not find ruleset ${id.slice(0, 64)}`),
  ruleNotFound: (id: string) => new EdgeError(404, RulesCodes.notFound, `could not find rule ${id.slice(0, 64)} in the ruleset`),
  phaseNotSupported: (phase: string, pointer?: string) =>
    new EdgeError(
      400,
      RulesCodes.invalid,
      `the phase ${JSON.stringify(phase.slice(0, 64))} is not supported here: this platform has rulesets of the phase http_request_cache_settings only (Cache Rules)`,
      pointer ? { pointer } : {},
    ),
  invalid: (pointer: string, why: string) => new EdgeError(400, RulesCodes.invalid, `${pointer}: ${why}`, { pointer }),
  notSupported: (pointer: string, what: string) =>
    new EdgeError(400, RulesCodes.invalid, `${pointer}: ${what} is not supported here (docs/cache.md, "Cache Rules")`, { pointer }),
  expression: (pointer: string, err: ExpressionError) => new EdgeError(400, RulesCodes.invalid, err.message, { pointer }),
  tooManyRules: (count: number, max: number) =>
    new EdgeError(400, RulesCodes.invalid, `a ruleset of the phase http_request_cache_settings holds at most ${max} rules (${count} given)`, {
      pointer: "/rules",
    }),
  regexBudget: (total: number, max: number) =>
    new EdgeError(400, RulesCodes.invalid, `the rules' regular expressions together are too large (${total} RE2 instructions, at most ${max} per ruleset)`, {
      pointer: "/rules",
    }),
  entrypointExists: () =>
    new EdgeError(400, RulesCodes.invalid, "the zone already has an entry point ruleset of the phase http_request_cache_settings", { pointer: "/phase" }),
  changedMeanwhile: () => new EdgeError(409, RulesCodes.conflict, "the ruleset was changed by another request at the same time; read it again and retry"),
};
