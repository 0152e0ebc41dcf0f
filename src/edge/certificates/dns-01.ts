import type { Logger } from "../../core/logger.js";
import type { ZonesPort } from "../../dns/service.js";
import type { Dns01Answerer } from "./acme.js";

/** TTL of a challenge record: short, as it lives for one order (the CA asks our server, which never caches). */
const CHALLENGE_TTL = 60;

/**
 * Answers DNS-01 challenges by writing the `_acme-challenge` TXT record into the zone the DNS server answers the
 * name from, through the zone service (a zone change like any other: stored, new serial, NOTIFY), and removing it
 * when the order is done. The record is shown read-only in the records API while this node's order runs.
 */
export class ChallengeRecords {
  /** The records this node's orders have made, by record id: what order keeps each. */
  private readonly live = new Map<string, string>();
  /** Record ids by `name value`, to remove what was made. */
  private readonly made = new Map<string, { zoneId: string; id: string }>();

  constructor(
    private readonly zones: ZonesPort,
    private readonly log: Logger,
    /**
     * How long to wait after writing the record before the CA is told to look: on several nodes the others read
     * the zone change from its notice (90–360 ms measured, docs/scale-out.md), and the CA may ask any of them.
     */
    private readonly propagationMs = 0,
  ) {
    zones.addRecordManager((r) => {
      const hostname = this.live.get(r.id);
      return hostname === undefined ? undefined : `the certificate order of the Worker Custom Domain ${hostname} (removed when it ends)`;
    });
  }

  /** The answerer of one order for `hostname`, which must be in a zone of `accountId`. */
  forOrder(hostname: string, accountId: string): Dns01Answerer {
    return {
      create: async (name, value) => {
        const zs = this.zones.zoneFor(name);
        // By construction the domain's zone answers its challenge name; a zone of another account never writes it.
        if (!zs || zs.zone.account_id !== accountId) throw new Error(`${name} is not answered from a zone of the domain's account on this platform`);
        const record = this.zones.record({ zoneId: zs.zone.id, name, type: "TXT", content: `"${value}"`, ttl: CHALLENGE_TTL, proxied: false });
        this.live.set(record.id, hostname);
        try {
          await this.zones.editRecords(zs, (draft) => draft.set(record));
        } catch (err) {
          this.live.delete(record.id);
          throw err;
        }
        this.made.set(`${name} ${value}`, { zoneId: zs.zone.id, id: record.id });
        if (this.propagationMs > 0) await new Promise((resolve) => setTimeout(resolve, this.propagationMs));
      },
      remove: async (name, value) => {
        const key = `${name} ${value}`;
        const made = this.made.get(key);
        if (!made) return;
        this.made.delete(key);
        const zs = this.zones.get(made.zoneId);
        try {
          // A zone deleted meanwhile took the record with it.
          if (zs?.records.has(made.id)) await this.zones.editRecords(zs, (draft) => draft.delete(made.id));
        } catch (err) {
          // acme-client drops what removal throws; said here, as the record stays (an ordinary one the account can delete).
          this.log.warn({ err, hostname, record: made.id }, "the _acme-challenge record of a certificate order was not removed");
          throw err;
        } finally {
          this.live.delete(made.id);
        }
      },
    };
  }
}
