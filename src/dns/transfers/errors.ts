import { EdgeError } from "../../core/errors.js";

/** Error codes of the secondary_dns routes (ours: the hosted API's codes for these are not known). */
export const TransferCodes = { validation: 1004, notFound: 1003, inUse: 1005, severalNodes: 9604, transferFailed: 9605, primariesRefused: 9606 } as const;

const invalid = (message: string, pointer?: string) => new EdgeError(400, TransferCodes.validation, message, { pointer });

export const TransferErrors = {
  invalid,
  tsigNotFound: () => new EdgeError(404, TransferCodes.notFound, "TSIG not found"),
  peerNotFound: () => new EdgeError(404, TransferCodes.notFound, "Peer not found"),
  outgoingNotFound: () => new EdgeError(404, TransferCodes.notFound, "This zone has no outgoing transfer configuration"),
  outgoingExists: () => invalid("This zone already has an outgoing transfer configuration; change it with PUT"),
  tsigInUse: (peers: string[]) => new EdgeError(400, TransferCodes.inUse, `The TSIG is used by peer(s) ${peers.join(", ")}; remove it from them first`),
  peerInUse: (zones: string[]) =>
    new EdgeError(400, TransferCodes.inUse, `The peer is used by the transfers of zone(s) ${zones.join(", ")}; remove it from them first`),
  unknownTsig: () => invalid("tsig_id: no TSIG with that id in this account", "/tsig_id"),
  unknownPeer: (id: string) => invalid(`peers: no peer ${id} in this zone's account`, "/peers"),
  /** Every primary is refused by the operator's address policy: the zone's configuration, so a 400 and not a 502. */
  primariesRefused: (why: string[]) =>
    new EdgeError(400, TransferCodes.primariesRefused, `No primary of this zone may be connected to; change its peers: ${why.join("; ")}`),
  transferFailed: (why: string) => new EdgeError(502, TransferCodes.transferFailed, `The zone transfer failed; the zone keeps what it held: ${why}`),
  incomingNotFound: () => new EdgeError(404, TransferCodes.notFound, "This zone has no incoming transfer configuration"),
  incomingExists: () => invalid("This zone already has an incoming transfer configuration; change it with PUT"),
  notSecondary: () =>
    invalid('Incoming transfers are for secondary zones: create the zone with "type": "secondary" (its records then come from its primaries)'),
  /** Transfer state (keys, peers, secondary zones' refresh state) lives in one node's SQLite. */
  notOnSeveralNodes: () =>
    new EdgeError(
      400,
      TransferCodes.severalNodes,
      "Secondary zones are not supported with --database-url (several nodes): transfer settings and refresh state are kept by each node in its own SQLite",
    ),
};
