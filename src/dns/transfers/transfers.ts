import type { ServiceContext } from "../../core/service.js";
import { SecretBox } from "../../core/secret-box.js";
import type { Logger } from "../../core/logger.js";
import type { DnsConfig } from "../config.js";
import type { AnswerEngine } from "../nameserver/answer.js";
import type { NotifyTarget } from "../nameserver/notify.js";
import type { ZoneService } from "../zones/zone-service.js";
import type { ZoneState } from "../zones/zone-state.js";
import { TransferDirectory } from "./directory.js";
import { TransferJournal } from "./journal.js";
import { TransferResponder } from "./responder.js";
import { TRANSFER_MIGRATIONS } from "./sqlite-migrations.js";
import { SqliteTransferStore } from "./sqlite-store.js";
import { SecondaryZones } from "./secondary.js";
import { TransferErrors } from "./errors.js";
import { peerAddressAllowed } from "./addresses.js";

/** The transfers area as the DNS service uses it: its state, the AXFR/IXFR answers, and where NOTIFY goes. */
export interface Transfers {
  directory: TransferDirectory;
  journal: TransferJournal;
  responder: TransferResponder;
  /** Secondary zones: refreshed from their primaries (secondary.ts). */
  secondary: SecondaryZones;
  /** Why secondary zones cannot be had here (several nodes), or undefined. */
  secondaryRefused?: () => Error;
  /** A zone's secondaries: its outgoing peers when it has an outgoing configuration, else the --notify targets. */
  notifyTargets(zs: ZoneState): NotifyTarget[];
  /** Whether a tenant's peer may have this address (addresses.ts peerAddressAllowed). */
  peerAllowed(ip: string): boolean;
  /** Reads the state; once, before the API or the server starts. */
  load(): Promise<void>;
  /** To call after every zone change. */
  zoneChanged(zs: ZoneState, kind: "records" | "settings" | "created" | "deleted"): void;
  /** Starts refreshing secondary zones (once the server answers); stop() ends it. */
  start(): void;
  stop(): void;
}

export function createTransfers(
  ctx: ServiceContext,
  zones: ZoneService,
  engine: AnswerEngine,
  cfg: DnsConfig,
  log: Logger,
  /** Empties every answer cache. */
  invalidate: () => void,
): Transfers {
  const store = new SqliteTransferStore(ctx.openDb("dns-transfers", TRANSFER_MIGRATIONS), SecretBox.load(ctx.config.stateDir));
  const directory = new TransferDirectory(store, log);
  const journal = new TransferJournal(store, engine, log);
  const responder = new TransferResponder(engine, zones.serving, directory, journal, cfg.axfrAllow, log);
  const peerAllowed = (ip: string) => peerAddressAllowed(ip, cfg.peerAllow);
  const secondary = new SecondaryZones(zones, directory, engine, log, invalidate, peerAllowed);
  let loaded: Promise<void> | undefined;
  return {
    directory,
    journal,
    responder,
    secondary,
    peerAllowed,
    secondaryRefused: ctx.postgres !== undefined ? TransferErrors.notOnSeveralNodes : undefined,
    notifyTargets(zs) {
      const outgoing = directory.outgoingOf(zs.zone.id);
      if (!outgoing) return cfg.notifyTargets;
      if (!outgoing.enabled) return [];
      return (
        directory
          .outgoingPeers(zs.zone.id)
          // A peer stored before the operator narrowed --dns-peer-allow is not sent anything.
          .filter((p) => p.ip && peerAllowed(p.ip))
          .map((p) => ({ host: p.ip!, port: p.port, key: directory.tsigKey(p.tsig_id) }))
      );
    },
    load() {
      return (loaded ??= (async () => {
        await zones.load();
        await directory.load();
        await journal.load(zones.all());
      })());
    },
    start: () => secondary.start(),
    stop: () => secondary.stop(),
    zoneChanged(zs, kind) {
      if (zs.zone.type === "secondary" && kind === "created") secondary.configured(zs.zone.id);
      if (kind === "deleted") {
        journal.deleted(zs.zone.id);
        if (zs.zone.type === "secondary") {
          secondary.forget(zs.zone.id);
          void directory
            .deleteIncoming(zs.zone.id)
            .catch((err) => log.warn({ err, zone: zs.zone.name }, "could not remove the incoming transfers of a deleted zone"));
        }
        void directory
          .deleteOutgoing(zs.zone.id)
          .catch((err) => log.warn({ err, zone: zs.zone.name }, "could not remove the outgoing transfers of a deleted zone"));
      } else journal.changed(zs);
    },
  };
}
