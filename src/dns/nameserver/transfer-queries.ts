import type * as packet from "dns-packet";
import type { ZoneState } from "../zones/zone-state.js";

type Decoded = ReturnType<typeof packet.decode>;

/**
 * What the server hands zone transfer queries and TSIG-signed queries to: transfers/responder.ts implements it (who
 * may transfer, signed or not, whole or incremental) and service.ts hands it over, so the transport never imports
 * transfers/.
 */
export interface TransferQueries {
  /** The messages answering an AXFR or IXFR for `zs` (undefined: not our zone) from `remote`. */
  answer(zs: ZoneState | undefined, q: Decoded, msg: Buffer, remote: string): Buffer[] | Iterable<Buffer>;
  /**
   * A signed ordinary query: `answer()` signed with the query's key, or the TSIG refusal; "unsigned" for a query
   * without TSIG (answered as usual).
   */
  answerSigned(zs: ZoneState | undefined, msg: Buffer, answer: () => Buffer | undefined): Buffer | undefined | "unsigned";
}
