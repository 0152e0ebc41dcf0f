import type { AnswerSigning } from "../nameserver/signing.js";
import type { ZoneService } from "../zones/zone-service.js";
import { DNSKEY_TTL } from "./keys.js";
import { signAnswer, type ZoneSigner } from "./online.js";
import { signedTransfer } from "./zone-transfer.js";

/** The nameserver's AnswerSigning (nameserver/signing.ts) made of the zones' keys and the signer: service.ts hands it to the answer engine. */
export function answerSigning(zones: Pick<ZoneService, "zoneFor">, keys: ZoneSigner): AnswerSigning {
  return {
    isSigned: (zoneId) => keys.signingFor(zoneId) !== undefined,
    dnskeys: (zoneId, owner) =>
      (keys.signingFor(zoneId)?.dnskeys ?? []).map((data) => ({ name: owner, type: "DNSKEY", class: "IN" as const, ttl: DNSKEY_TTL, data })),
    signAnswer: (res) => signAnswer(res, zones, keys),
    signedTransfer(zs, soa, content, negativeTtl) {
      const signing = keys.signingFor(zs.zone.id);
      return signing && signedTransfer(zs.zone.name, soa, content, signing, keys.signer, negativeTtl);
    },
  };
}
