import type { RulesetView } from "./ruleset.js";

/** A zone's Cache Rules ruleset as stored: the hosted answer's shape, whole. */
export interface StoredRuleset {
  zoneId: string;
  accountId: string;
  ruleset: RulesetView;
}

/**
 * The Cache Rules ruleset of each zone (a zone that never had one has no row). Every backend keeps these promises
 * (store.contract.ts):
 * - `put` writes the zone's ruleset only if the stored one is still at `expectedVersion` (undefined: there is none
 *   yet) and answers whether it wrote: two writers of one zone (two requests, two nodes) never lose each other's change.
 * - `zone` reads one zone's, `all` every zone's, ordered by zone.
 * - `delete` removes a zone's ruleset (at `expectedVersion` when given) and answers whether there was one.
 */
export interface CacheRulesStore {
  all(): Promise<StoredRuleset[]>;
  zone(zoneId: string): Promise<StoredRuleset | undefined>;
  put(row: StoredRuleset, expectedVersion: string | undefined): Promise<boolean>;
  delete(zoneId: string, expectedVersion?: string): Promise<boolean>;
}
