import type { DomainRecords } from "./dns-records.js";
import type { RoutesStore } from "./store.js";

/**
 * A deleted Worker's routes and Custom Domains go too: names are unique platform-wide, so a route left behind would
 * send its hostname to whichever account next takes the name. The domains' records go last (dns-records.ts says why).
 */
export async function removeScriptRoutes(
  store: RoutesStore,
  records: DomainRecords,
  reload: () => Promise<void>,
  accountId: string,
  script: string,
): Promise<void> {
  const domains = (await store.domains(accountId)).filter((d) => d.service === script);
  await store.deleteScript(accountId, script);
  await reload();
  await records.detachAll(domains);
}
