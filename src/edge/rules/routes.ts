import type { FastifyInstance, FastifyRequest } from "fastify";
import { ok } from "../../core/http/envelope.js";
import type { AccountResolver } from "../../core/http/guard.js";
import type { EdgeZones } from "../ports.js";
import type { CacheRulesets } from "./cache-rules.js";
import { RulesErrors } from "./errors.js";
import { loadExpressionCompiler } from "./expression/compiler.js";
import { parseRuleset, PHASE, type RulesetView } from "./ruleset.js";

type ZoneParams = { zone_id: string };
type ZoneRequest = FastifyRequest<{ Params: ZoneParams }>;

/**
 * The guard's account for the rulesets routes: the zone's. A zone of an account where the caller holds neither Cache
 * Rules nor DNS read is answered like a missing one (404), so zone ids cannot be probed.
 */
function zoneAccount(zones: EdgeZones): AccountResolver {
  return (req) => {
    const accountId = zones.accountOf((req as ZoneRequest).params.zone_id);
    if (!accountId || !(req.principal.can(accountId, "cache_rules_read") || req.principal.can(accountId, "dns_read"))) throw RulesErrors.zoneNotFound();
    return accountId;
  };
}

function accountOf(zones: EdgeZones, req: ZoneRequest): string {
  const accountId = zones.accountOf(req.params.zone_id);
  if (!accountId) throw RulesErrors.zoneNotFound();
  return accountId;
}

/** Only the phase built here; any other is refused by name (never an empty answer that looks like "no rules"). */
function checkPhase(phase: string): void {
  if (phase !== PHASE) throw RulesErrors.phaseNotSupported(phase);
}

/** The list's entry of a ruleset: the ruleset without its rules, as hosted. */
const summary = ({ rules: _rules, ...rest }: RulesetView) => rest;

/**
 * The hosted Rulesets API for the zone phase http_request_cache_settings (Cache Rules): the entry point, the zone's
 * rulesets, and the single-rule operations.
 */
export function registerRulesRoutes(app: FastifyInstance, zones: EdgeZones, rules: CacheRulesets): void {
  const read = { permission: "cache_rules_read", account: zoneAccount(zones) } as const;
  const edit = { permission: "cache_rules_edit", account: zoneAccount(zones) } as const;
  const existing = (zoneId: string, rulesetId: string) => {
    const ruleset = rules.get(zoneId);
    if (!ruleset || ruleset.id !== rulesetId) throw RulesErrors.rulesetNotFound(rulesetId);
    return ruleset;
  };

  app.get<{ Params: ZoneParams & { phase: string } }>("/zones/:zone_id/rulesets/phases/:phase/entrypoint", { config: read }, async (req) => {
    accountOf(zones, req);
    checkPhase(req.params.phase);
    const ruleset = rules.get(req.params.zone_id);
    if (!ruleset) throw RulesErrors.noEntrypoint(PHASE);
    return ok(ruleset);
  });

  app.put<{ Params: ZoneParams & { phase: string } }>("/zones/:zone_id/rulesets/phases/:phase/entrypoint", { config: edit }, async (req) => {
    const accountId = accountOf(zones, req);
    checkPhase(req.params.phase);
    await loadExpressionCompiler();
    return ok(await rules.replace(req.params.zone_id, accountId, parseRuleset(req.body)));
  });

  app.get<{ Params: ZoneParams }>("/zones/:zone_id/rulesets", { config: read }, async (req) => {
    accountOf(zones, req);
    const ruleset = rules.get(req.params.zone_id);
    return ok(ruleset ? [summary(ruleset)] : [], {});
  });

  app.post<{ Params: ZoneParams }>("/zones/:zone_id/rulesets", { config: edit }, async (req) => {
    const accountId = accountOf(zones, req);
    await loadExpressionCompiler();
    return ok(await rules.create(req.params.zone_id, accountId, parseRuleset(req.body, { requirePhase: true })));
  });

  type RulesetParams = { Params: ZoneParams & { ruleset_id: string } };
  app.get<RulesetParams>("/zones/:zone_id/rulesets/:ruleset_id", { config: read }, async (req) => {
    accountOf(zones, req);
    return ok(existing(req.params.zone_id, req.params.ruleset_id));
  });

  app.put<RulesetParams>("/zones/:zone_id/rulesets/:ruleset_id", { config: edit }, async (req) => {
    const accountId = accountOf(zones, req);
    await loadExpressionCompiler();
    return ok(await rules.replace(req.params.zone_id, accountId, parseRuleset(req.body), req.params.ruleset_id));
  });

  app.delete<RulesetParams>("/zones/:zone_id/rulesets/:ruleset_id", { config: edit }, async (req, reply) => {
    accountOf(zones, req);
    await rules.deleteRuleset(req.params.zone_id, req.params.ruleset_id);
    // As hosted: 204, no body.
    return reply.code(204).send();
  });

  app.post<RulesetParams>("/zones/:zone_id/rulesets/:ruleset_id/rules", { config: edit }, async (req) => {
    const accountId = accountOf(zones, req);
    return ok(await rules.addRule(req.params.zone_id, accountId, req.params.ruleset_id, req.body));
  });

  type RuleParams = { Params: ZoneParams & { ruleset_id: string; rule_id: string } };
  app.patch<RuleParams>("/zones/:zone_id/rulesets/:ruleset_id/rules/:rule_id", { config: edit }, async (req) => {
    const accountId = accountOf(zones, req);
    return ok(await rules.editRule(req.params.zone_id, accountId, req.params.ruleset_id, req.params.rule_id, req.body));
  });

  app.delete<RuleParams>("/zones/:zone_id/rulesets/:ruleset_id/rules/:rule_id", { config: edit }, async (req) => {
    const accountId = accountOf(zones, req);
    return ok(await rules.deleteRule(req.params.zone_id, accountId, req.params.ruleset_id, req.params.rule_id));
  });
}
