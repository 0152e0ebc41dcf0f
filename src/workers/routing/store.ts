/** A route of a zone: requests matching `pattern` run `script` (none: Workers are off for them). */
export interface WorkerRoute {
  id: string;
  zoneId: string;
  /** The zone's account, which the script belongs to. */
  accountId: string;
  pattern: string;
  script: string | null;
}

/** A Custom Domain: every request to `hostname` runs `service`. */
export interface CustomDomain {
  id: string;
  accountId: string;
  zoneId: string;
  zoneName: string;
  hostname: string;
  service: string;
  environment: string;
}

/**
 * Workers routes and Custom Domains. Every backend keeps these promises (store.contract.ts):
 *
 * - A pattern is unique in its zone: adding or changing a route to a pattern the zone has (another route) is refused
 *   with `RoutesErrors.duplicateRoute`, and nothing changes.
 * - A hostname is one Custom Domain platform-wide; `putDomain` moves it to another Worker only when told to
 *   (`override`), and never across accounts (the caller checks the zone's account first).
 * - `replaceScriptRoutes` is all or nothing.
 * - The callers check that zones, hostnames and scripts belong to the account; the store keeps what it is given.
 */
export interface RoutesStore {
  /** A zone's routes, oldest first. */
  zoneRoutes(zoneId: string): Promise<WorkerRoute[]>;
  /** An account's routes to one script, oldest first. */
  scriptRoutes(accountId: string, script: string): Promise<WorkerRoute[]>;
  allRoutes(): Promise<WorkerRoute[]>;
  addRoute(route: WorkerRoute): Promise<void>;
  /** Changes a route's pattern and script; false when the zone has no such route. */
  updateRoute(route: WorkerRoute): Promise<boolean>;
  deleteRoute(zoneId: string, id: string): Promise<boolean>;
  /** Replaces the routes an account has to `script` with `routes` (what `wrangler deploy` sends). */
  replaceScriptRoutes(accountId: string, script: string, routes: readonly WorkerRoute[]): Promise<void>;

  /** An account's Custom Domains, by hostname. */
  domains(accountId: string): Promise<CustomDomain[]>;
  allDomains(): Promise<CustomDomain[]>;
  domainByHostname(hostname: string): Promise<CustomDomain | undefined>;
  /**
   * Attaches `domain.hostname` to `domain.service`: a new domain, or, for a hostname already attached, the same
   * record (its id kept) pointing at the new service when `override` or when it already points there; otherwise
   * refused with `RoutesErrors.domainTaken`. Returns what is stored.
   */
  putDomain(domain: CustomDomain, override: boolean): Promise<CustomDomain>;
  deleteDomain(accountId: string, id: string): Promise<boolean>;

  /** Turns a Worker's `<name>.<workers domain>` URL on or off (on by default). */
  setWorkersDev(accountId: string, script: string, enabled: boolean): Promise<void>;
  /** The Workers whose `<name>.<workers domain>` URL is off. */
  workersDevOff(): Promise<{ accountId: string; script: string }[]>;

  /** Removes the routes and Custom Domains of a zone (it was deleted). */
  deleteZone(zoneId: string): Promise<void>;
  /** Removes an account's routes, Custom Domains and URL setting of a script (it was deleted). */
  deleteScript(accountId: string, script: string): Promise<void>;
}
