import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { ApiRequestError, type ApiClient } from "../../core/cli/api-client.js";
import type { CliContext } from "../../core/cli/context.js";
import { UsageError, UserError } from "../../core/errors.js";
import { TransferCodes } from "../transfers/errors.js";
import { findZone } from "./zone.js";

/** The fields of GET /zones/{id}/secondary_dns/incoming the CLI shows. */
interface IncomingInfo {
  peers: string[];
  auto_refresh_seconds: number;
  soa_serial: number;
  checked_time: string | null;
  last_transferred_time: string | null;
  next_refresh_time: string | null;
  expires_time: string | null;
  last_error: string | null;
  skipped_records: number;
}
interface PeerInfo {
  id: string;
  name: string;
  ip: string | null;
  port: number;
  tsig_id: string | null;
  ixfr_enable: boolean;
}
interface TsigInfo {
  id: string;
  name: string;
  algo: string;
}
interface ZoneWithAccount {
  id: string;
  name: string;
  type?: string;
  account: { id: string };
}

/** Peers `create` makes are named after the zone and the address, so `delete` knows which ones are its own. */
const peerName = (zone: string, ip: string, port: number) => `secondary:${zone}:${ip.includes(":") ? `[${ip}]` : ip}:${port}`;
const ownPeer = (zone: string, p: PeerInfo) => p.name.startsWith(`secondary:${zone}:`);

/** `192.0.2.1`, `192.0.2.1:5353`, `2001:db8::1` or `[2001:db8::1]:5353`. */
export function parsePrimary(spec: string): { ip: string; port: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(spec);
  const v4 = /^([^:]+)(?::(\d+))?$/.exec(spec);
  const [ip, port] = bracketed ? [bracketed[1], bracketed[2]] : v4 ? [v4[1], v4[2]] : [spec, undefined];
  const n = port === undefined ? 53 : Number(port);
  if (!isIP(ip) || !Number.isInteger(n) || n < 1 || n > 65535)
    throw new UsageError(`--primary "${spec}" is not an address with an optional port (192.0.2.1, 192.0.2.1:5353, [2001:db8::1]:53)`);
  return { ip, port: n };
}

/** The TSIG secret: from the file, or from stdin for `-` (a hidden prompt on a terminal); never from the command line. */
async function readTsigSecret(file: string, ctx: CliContext): Promise<string> {
  let text: string;
  try {
    if (file !== "-") text = readFileSync(file, "utf8");
    else if (ctx.io.stdin.isTTY) text = await ctx.promptHidden("TSIG secret (base64):");
    else text = (await ctx.readStdin()).toString("utf8");
  } catch (e) {
    throw new UserError(`Cannot read the TSIG secret from ${file}: ${(e as Error).message}`);
  }
  // A file written by `openssl rand -base64 32 > key` ends with a newline; Knot's keymgr/BIND's tsig-keygen style
  // "secret: ..." lines are not parsed: give the bare base64.
  return text.trim();
}

interface CreateArgs {
  zone?: string;
  primary?: string[];
  "tsig-name"?: string;
  "tsig-algorithm"?: string;
  "tsig-secret-file"?: string;
  ixfr?: boolean;
  "refresh-max"?: number;
}

/**
 * `edgecli dns secondary create <zone> --primary <addr> [--tsig-name --tsig-secret-file] [--ixfr] [--refresh-max]`:
 * the TSIG key (new, or the account's of that name), one peer per primary, the secondary zone and its incoming
 * transfers. Anything made before a step fails is removed again, so a failed create leaves nothing behind.
 */
export async function createSecondary(a: CreateArgs, ctx: CliContext): Promise<void> {
  const zone = a.zone!.toLowerCase().replace(/\.$/, "");
  const primaries = (a.primary ?? []).map(parsePrimary);
  if (primaries.length === 0) throw new UsageError("Give at least one --primary (the address of the zone's primary server)");
  if (a["tsig-secret-file"] !== undefined && !a["tsig-name"])
    throw new UsageError("--tsig-secret-file needs --tsig-name (the key's name, as the primary knows it)");
  const secret = a["tsig-secret-file"] !== undefined ? await readTsigSecret(a["tsig-secret-file"], ctx) : undefined;
  const api = ctx.api();
  const account = await ctx.accountId();
  const base = `/accounts/${account}/secondary_dns`;
  const undo: (() => Promise<unknown>)[] = [];
  try {
    let tsigId: string | null = null;
    if (a["tsig-name"]) {
      const name = a["tsig-name"].toLowerCase().replace(/\.?$/, ".");
      const existing = (await api.fetchResult<TsigInfo[]>("GET", `${base}/tsigs`)).find((t) => t.name === name);
      if (existing && secret !== undefined)
        throw new UserError(`The account already has a TSIG key ${name}: leave out --tsig-secret-file to use it, or give the new key another name`);
      if (!existing && secret === undefined) throw new UsageError(`The account has no TSIG key ${name}: give its secret with --tsig-secret-file <file|->`);
      if (existing) tsigId = existing.id;
      else {
        const created = await api.fetchResult<TsigInfo>("POST", `${base}/tsigs`, { json: { name, algo: a["tsig-algorithm"] ?? "hmac-sha256", secret } });
        tsigId = created.id;
        undo.push(() => api.fetchResult("DELETE", `${base}/tsigs/${created.id}`));
      }
    }
    const peers: string[] = [];
    for (const { ip, port } of primaries) {
      const peer = await api.fetchResult<PeerInfo>("POST", `${base}/peers`, {
        json: { name: peerName(zone, ip, port), ip, port, tsig_id: tsigId, ixfr_enable: !!a.ixfr },
      });
      peers.push(peer.id);
      undo.push(() => api.fetchResult("DELETE", `${base}/peers/${peer.id}`));
    }
    const z = await api.fetchResult<ZoneWithAccount>("POST", "/zones", { json: { name: zone, type: "secondary", account: { id: account } } });
    undo.push(() => api.fetchResult("DELETE", `/zones/${z.id}`));
    await api.fetchResult("POST", `/zones/${z.id}/secondary_dns/incoming`, { json: { peers, auto_refresh_seconds: a["refresh-max"] } });
    ctx.log.info(
      `Created secondary zone ${z.name} with id ${z.id}, copied from ${primaries.map((p) => `${p.ip}:${p.port}`).join(", ")}${tsigId ? ` with TSIG key ${a["tsig-name"]}` : ""}.\n` +
        `The first transfer is under way: see \`edgecli dns secondary status ${z.name}\`.`,
    );
  } catch (e) {
    // Newest first: the zone before its peers, the peers before their key.
    for (const step of undo.reverse()) await step().catch(() => undefined);
    throw e;
  }
}

/** The zone, checked to be a secondary one. */
async function secondaryZone(zoneArg: string, ctx: CliContext): Promise<ZoneWithAccount> {
  const z = (await findZone(zoneArg, ctx)) as unknown as ZoneWithAccount;
  if (z.type !== "secondary") throw new UserError(`${z.name} is not a secondary zone (its records are edited here, not copied from a primary)`);
  return z;
}

/** `edgecli dns secondary status <zone> [--json]` */
export async function secondaryStatus(args: { zone?: string; json?: boolean }, ctx: CliContext): Promise<void> {
  const z = await secondaryZone(args.zone!, ctx);
  const api = ctx.api();
  const i = await api.fetchResult<IncomingInfo>("GET", `/zones/${z.id}/secondary_dns/incoming`);
  if (args.json) return ctx.json(i);
  const peers = await primariesOf(api, z, i.peers);
  const never = "never";
  const lines = [
    `Secondary zone ${z.name} (${z.id})`,
    `  primaries:      ${peers.map((p) => `${p.ip}:${p.port}${p.tsig ? ` (TSIG ${p.tsig})` : ""}${p.ixfr_enable ? " IXFR" : ""}`).join(", ")}`,
    `  serial:         ${i.last_transferred_time ? i.soa_serial : "none (not transferred yet)"}`,
    `  last transfer:  ${i.last_transferred_time ?? never}`,
    `  last checked:   ${i.checked_time ?? never}`,
    `  next refresh:   ${i.next_refresh_time ?? "now (a refresh is running)"}`,
    `  served until:   ${i.expires_time ?? "not served: answering SERVFAIL until a primary answers"}`,
    `  last error:     ${i.last_error ?? "none"}`,
  ];
  if (i.skipped_records)
    lines.push(`  not kept:       ${i.skipped_records} record(s) of the last transfer (DNSSEC records, types the platform does not store)`);
  ctx.log.info(lines.join("\n"));
}

async function primariesOf(api: ApiClient, z: ZoneWithAccount, ids: string[]): Promise<(PeerInfo & { tsig: string | null })[]> {
  const base = `/accounts/${z.account.id}/secondary_dns`;
  const [peers, tsigs] = await Promise.all([api.fetchResult<PeerInfo[]>("GET", `${base}/peers`), api.fetchResult<TsigInfo[]>("GET", `${base}/tsigs`)]);
  return peers.filter((p) => ids.includes(p.id)).map((p) => ({ ...p, tsig: tsigs.find((t) => t.id === p.tsig_id)?.name ?? null }));
}

/** `edgecli dns secondary transfer <zone>`: a whole-zone transfer now; waits for it and says how it went. */
export async function forceTransfer(args: { zone?: string }, ctx: CliContext): Promise<void> {
  const z = await secondaryZone(args.zone!, ctx);
  const api = ctx.api();
  await api.fetchResult("POST", `/zones/${z.id}/secondary_dns/force_axfr`);
  const i = await api.fetchResult<IncomingInfo>("GET", `/zones/${z.id}/secondary_dns/incoming`);
  ctx.log.info(`Transferred ${z.name}: serial ${i.soa_serial}.`);
}

/**
 * `edgecli dns secondary delete <zone> [--yes]`: the zone, its incoming transfers, the peers `create` made for it
 * (unless another zone uses them) and their TSIG key when no peer uses it any more.
 */
export async function deleteSecondary(args: { zone?: string; yes?: boolean }, ctx: CliContext): Promise<void> {
  const z = await secondaryZone(args.zone!, ctx);
  if (!(await ctx.confirmDestructive(`Delete the secondary zone ${z.name} and all its records?`, { given: args.yes, flag: "--yes (-y)" }))) {
    ctx.log.info("Not deleted.");
    return;
  }
  const api = ctx.api();
  const base = `/accounts/${z.account.id}/secondary_dns`;
  const incoming = await api.fetchResult<IncomingInfo>("GET", `/zones/${z.id}/secondary_dns/incoming`).catch((e: unknown) => {
    if (e instanceof ApiRequestError && e.status === 404) return undefined;
    throw e;
  });
  const peers = incoming ? (await primariesOf(api, z, incoming.peers)).filter((p) => ownPeer(z.name, p)) : [];
  // The incoming configuration first, so its peers are free to go once the zone is.
  if (incoming) await api.fetchResult("DELETE", `/zones/${z.id}/secondary_dns/incoming`);
  await api.fetchResult("DELETE", `/zones/${z.id}`);
  const kept: string[] = [];
  const inUse = (e: unknown) => e instanceof ApiRequestError && e.hasCode(TransferCodes.inUse);
  for (const p of peers) await api.fetchResult("DELETE", `${base}/peers/${p.id}`).catch((e: unknown) => (inUse(e) ? kept.push(p.name) : Promise.reject(e)));
  for (const id of new Set(peers.map((p) => p.tsig_id).filter((t): t is string => t !== null)))
    await api.fetchResult("DELETE", `${base}/tsigs/${id}`).catch((e: unknown) => (inUse(e) ? undefined : Promise.reject(e)));
  ctx.log.info(`Deleted secondary zone ${z.name}.${kept.length ? ` Kept peer(s) other zones use: ${kept.join(", ")}.` : ""}`);
}
