import { ChangesDuringLoad } from "../../core/cluster/changes-during-load.js";
import { QueueByKey } from "../../core/cluster/queue-by-key.js";
import type { Bus } from "../../core/cluster/bus.js";
import type { Logger } from "../../core/logger.js";
import type { CacheRules, CacheSettings, RuleRequest } from "../ports.js";
import { toCacheSettings } from "./action.js";
import { RulesErrors } from "./errors.js";
import { RequestFields } from "./expression/fields.js";
import { compileExpression, loadExpressionCompiler } from "./expression/compiler.js";
import type { Predicate } from "./expression/parser.js";
import { RULES_AREA } from "./pg-store.js";
import {
  asInput,
  MAX_RULES,
  MAX_RULESET_REGEX_INSTRUCTIONS,
  nextRuleset,
  parseRule,
  positionOf,
  regexInstructionsOf,
  type RuleInput,
  type RulesetInput,
  type RulesetView,
} from "./ruleset.js";
import type { CacheRulesStore, StoredRuleset } from "./store.js";

/** A zone's ruleset as kept in memory: the stored one (answered by the API) and its enabled rules compiled. */
interface ZoneRules {
  stored: StoredRuleset;
  compiled: { test: Predicate; settings: CacheSettings }[];
}

const NO_SETTINGS: CacheSettings = Object.freeze({});
/**
 * How often a change that lost the race to another node's writer is tried again on the new version before a 409
 * (changes through one node are queued per zone, so only other nodes' writes race).
 */
const WRITE_ATTEMPTS = 10;

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

function compile(stored: StoredRuleset): ZoneRules {
  const compiled = stored.ruleset.rules
    .filter((r) => r.enabled)
    .map((r) => ({ test: compileExpression(r.expression).test, settings: deepFreeze(toCacheSettings(structuredClone(r.action_parameters))) }));
  return { stored, compiled };
}

/**
 * Every zone's Cache Rules in memory, compiled once when loaded or changed (the cache asks `settingsFor` on every
 * request, without waiting on the store); writes go to the store first, as a compare-and-set on the ruleset's version.
 * On several nodes a change's bus notice (`zone:<id>`) makes every node read that zone again, and a resync reads them
 * all.
 */
export class CacheRulesets implements CacheRules {
  private byZone = new Map<string, ZoneRules>();
  /** Per zone, this node's writes and reloads in turn (no two race each other, nor a reload a write). */
  private readonly queue = new QueueByKey();
  /** What a whole reload (a resync) must not undo: zones changed here while it read. */
  private readonly loading = new ChangesDuringLoad();
  private unsubscribe?: () => void;

  constructor(
    private readonly store: CacheRulesStore,
    private readonly log: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async load(): Promise<void> {
    this.byZone = await this.loading.load(
      async () => {
        const next = new Map<string, ZoneRules>();
        const all = await this.store.all();
        // Before the node is ready: stored rules apply to its first request.
        if (all.length > 0) await loadExpressionCompiler();
        for (const stored of all) {
          try {
            next.set(stored.zoneId, compile(stored));
          } catch (err) {
            // Stored rules were valid when written; one that no longer compiles (a later, stricter version) is skipped, loudly.
            this.log.error({ err, zoneId: stored.zoneId }, "cache rules of a zone not loaded");
          }
        }
        return next;
      },
      () => this.byZone,
    );
  }

  /** `failed`: told of a reload that failed (an edge thread then starts again: its copy would stay old). */
  follow(bus: Bus, failed?: (err: unknown) => void): void {
    this.unsubscribe = bus.subscribe(RULES_AREA, (event) => {
      // This node's own writes are in memory already (its write path sets them): read again only others'.
      if (event.type === "change" && event.origin === bus.nodeId) return;
      const reload = event.type === "resync" ? this.load() : event.what.startsWith("zone:") ? this.reloadZone(event.what.slice(5)) : Promise.resolve();
      // Returned: the bus's barrier waits for it (API reads of this node then see the other node's change).
      return reload.catch((err: unknown) => {
        this.log.error({ err, event }, "cache rules not reloaded");
        failed?.(err);
      });
    });
  }

  stop(): void {
    this.unsubscribe?.();
  }

  /**
   * The port (edge/ports.ts): the parameters of the enabled rules that match, merged in rule order as hosted (a later
   * match replaces a setting an earlier one set). Allocates nothing when no rule matches, and one object per further
   * match otherwise.
   */
  hasRules(zoneId: string): boolean {
    return (this.byZone.get(zoneId)?.compiled.length ?? 0) > 0;
  }

  settingsFor(zoneId: string, request: RuleRequest): CacheSettings {
    const zone = this.byZone.get(zoneId);
    if (!zone || zone.compiled.length === 0) return NO_SETTINGS;
    const fields = new RequestFields(request);
    let merged: CacheSettings | undefined;
    for (const rule of zone.compiled) if (rule.test(fields)) merged = merged ? { ...merged, ...rule.settings } : rule.settings;
    return merged ?? NO_SETTINGS;
  }

  /** The zone's ruleset as the API answers it, or undefined when it has none. */
  get(zoneId: string): RulesetView | undefined {
    return this.byZone.get(zoneId)?.stored.ruleset;
  }

  /** Replaces the zone's ruleset (PUT of the entry point or of the ruleset by id): creates it if there is none. */
  async replace(zoneId: string, accountId: string, input: RulesetInput, rulesetId?: string): Promise<RulesetView> {
    return this.change(zoneId, accountId, (previous) => {
      if (rulesetId !== undefined && previous?.id !== rulesetId) throw RulesErrors.rulesetNotFound(rulesetId);
      return input;
    });
  }

  /** Creates the zone's ruleset (POST /rulesets): refused when it has one. */
  async create(zoneId: string, accountId: string, input: RulesetInput): Promise<RulesetView> {
    return this.change(zoneId, accountId, (previous) => {
      if (previous) throw RulesErrors.entrypointExists();
      return input;
    });
  }

  /** Adds one rule (POST …/rules) where `position` says, the end by default. */
  async addRule(zoneId: string, accountId: string, rulesetId: string, body: unknown): Promise<RulesetView> {
    await loadExpressionCompiler();
    const { rule } = parseRule(body, "", undefined, { position: true });
    if (rule.id !== undefined) throw RulesErrors.invalid("/id", "is chosen by the platform for a new rule: leave it out");
    return this.change(zoneId, accountId, (previous) => {
      const rules = this.rulesOf(previous, rulesetId);
      rules.splice(positionOf((body as { position?: unknown }).position, rules), 0, rule);
      return { rules };
    });
  }

  /** Changes one rule (PATCH …/rules/{id}): the fields given replace the rule's, and `position` moves it. */
  async editRule(zoneId: string, accountId: string, rulesetId: string, ruleId: string, body: unknown): Promise<RulesetView> {
    await loadExpressionCompiler();
    return this.change(zoneId, accountId, (previous) => {
      const rules = this.rulesOf(previous, rulesetId);
      const at = rules.findIndex((r) => r.id === ruleId);
      if (at < 0) throw RulesErrors.ruleNotFound(ruleId);
      const { rule } = parseRule(body, "", rules[at], { position: true });
      if (rule.id !== ruleId) throw RulesErrors.invalid("/id", "cannot change a rule's id");
      rules.splice(at, 1);
      const position = (body as { position?: unknown }).position;
      rules.splice(position === undefined ? at : positionOf(position, rules), 0, rule);
      return { rules };
    });
  }

  async deleteRule(zoneId: string, accountId: string, rulesetId: string, ruleId: string): Promise<RulesetView> {
    return this.change(zoneId, accountId, (previous) => {
      const rules = this.rulesOf(previous, rulesetId);
      const at = rules.findIndex((r) => r.id === ruleId);
      if (at < 0) throw RulesErrors.ruleNotFound(ruleId);
      rules.splice(at, 1);
      return { rules };
    });
  }

  /** Deletes the zone's ruleset (DELETE /rulesets/{id}): its rules stop applying on every node. */
  deleteRuleset(zoneId: string, rulesetId: string): Promise<void> {
    return this.serially(zoneId, async () => {
      const current = await this.store.zone(zoneId);
      if (!current || current.ruleset.id !== rulesetId) throw RulesErrors.rulesetNotFound(rulesetId);
      await this.store.delete(zoneId);
      this.loading.changed(zoneId);
      this.byZone.delete(zoneId);
    });
  }

  /** The zone was deleted: its rules go with it. */
  zoneDeleted(zoneId: string): Promise<void> {
    return this.serially(zoneId, async () => {
      await this.store.delete(zoneId);
      this.loading.changed(zoneId);
      this.byZone.delete(zoneId);
    });
  }

  private rulesOf(previous: RulesetView | undefined, rulesetId: string): RuleInput[] {
    if (!previous || previous.id !== rulesetId) throw RulesErrors.rulesetNotFound(rulesetId);
    return previous.rules.map(asInput);
  }

  /**
   * Reads the stored ruleset, applies `edit` to it, checks the bounds and writes the result over the version read;
   * when another writer came first, the edit is applied again to what it wrote.
   */
  private change(zoneId: string, accountId: string, edit: (previous: RulesetView | undefined) => RulesetInput): Promise<RulesetView> {
    return this.serially(zoneId, () => this.write(zoneId, accountId, edit));
  }

  /**
   * Runs `work` after the zone's writes and reloads queued before it: a reload that read an older ruleset can then
   * never land after one that read a newer (two quick changes through another node), nor after a write of this node.
   */
  private serially<T>(zoneId: string, work: () => Promise<T>): Promise<T> {
    return this.queue.run(zoneId, work);
  }

  private async write(zoneId: string, accountId: string, edit: (previous: RulesetView | undefined) => RulesetInput): Promise<RulesetView> {
    await loadExpressionCompiler();
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      // After a lost race, a short random pause, so two nodes retrying do not collide again in step.
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
      const current = await this.store.zone(zoneId);
      const input = edit(current?.ruleset);
      if (input.rules.length > MAX_RULES) throw RulesErrors.tooManyRules(input.rules.length, MAX_RULES);
      const regex = regexInstructionsOf(input.rules);
      if (regex > MAX_RULESET_REGEX_INSTRUCTIONS) throw RulesErrors.regexBudget(regex, MAX_RULESET_REGEX_INSTRUCTIONS);
      const stored: StoredRuleset = { zoneId, accountId, ruleset: nextRuleset(current?.ruleset, input, this.now()) };
      const zone = compile(stored);
      if (await this.store.put(stored, current?.ruleset.version)) {
        this.loading.changed(zoneId);
        // The bus notice of a later write (through another node) may have been applied already: keep the newer.
        const kept = this.byZone.get(zoneId)?.stored.ruleset;
        if (!kept || kept.id !== stored.ruleset.id || Number(kept.version) <= Number(stored.ruleset.version)) this.byZone.set(zoneId, zone);
        return stored.ruleset;
      }
    }
    throw RulesErrors.changedMeanwhile();
  }

  private reloadZone(zoneId: string): Promise<void> {
    return this.serially(zoneId, async () => {
      const stored = await this.store.zone(zoneId);
      if (stored) await loadExpressionCompiler();
      this.loading.changed(zoneId);
      if (!stored) this.byZone.delete(zoneId);
      else this.byZone.set(zoneId, compile(stored));
    });
  }
}
