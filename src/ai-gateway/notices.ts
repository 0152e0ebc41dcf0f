/**
 * What the AI gateway tells other nodes through the bus (area `ai_gateway`): which gateway's settings changed, or
 * whose logs or provider keys changed, never the data. Each node caches gateway settings (gateways/directory.ts), answers
 * (proxy/response-cache.ts) and log counts (logs/counts.ts); a notice makes it drop what it has of that gateway.
 */
export const AIG_BUS_AREA = "ai_gateway";

export type GatewayNotice =
  /** The gateway was created, replaced or deleted; `dropAnswers`: its cached answers must go too. */
  | { kind: "gateway"; accountId: string; gatewayId: string; dropAnswers: boolean }
  /** Some of the gateway's logs were deleted: a count of them is stale. */
  | { kind: "logs"; accountId: string; gatewayId: string }
  /** The gateway's provider keys changed (added, replaced, deleted): the keys a node holds of it are stale. */
  | { kind: "keys"; accountId: string; gatewayId: string };

/** The notice's text: `<kind> <account>/<gateway>` (ids never hold a space or a slash). */
export function writeNotice(n: GatewayNotice): string {
  const kind = n.kind === "gateway" ? (n.dropAnswers ? "gateway-answers" : "gateway") : n.kind;
  return `${kind} ${n.accountId}/${n.gatewayId}`;
}

/** The notice a text names, or undefined for one this version does not know (a newer node's). */
export function readNotice(what: string): GatewayNotice | undefined {
  const m = /^(gateway|gateway-answers|logs|keys) ([^/ ]+)\/([^/ ]+)$/.exec(what);
  if (!m) return undefined;
  const [, kind, accountId, gatewayId] = m;
  return kind === "logs" || kind === "keys"
    ? { kind, accountId, gatewayId }
    : { kind: "gateway", accountId, gatewayId, dropAnswers: kind === "gateway-answers" };
}
