import type { CliContext } from "../../core/cli/context.js";
import { UserError } from "../../core/errors.js";
import { findZone } from "./zone.js";

/** The fields of GET /zones/{id}/dnssec the CLI shows. */
interface DnssecInfo {
  status: string;
  ds: string | null;
  ds_records: string[];
  key_tag: number | null;
  public_key: string | null;
  flags: number | null;
  algorithm: string | null;
  rollover: { key: string; stage: string; next_step: string; next_step_after: string } | null;
}

function print(zone: string, d: DnssecInfo, ctx: CliContext): void {
  if (d.status === "disabled") {
    ctx.log.info(`DNSSEC is disabled for ${zone}.`);
    return;
  }
  const lines = [`DNSSEC is ${d.status} for ${zone}.`];
  if (d.status === "pending") lines.push("Resolvers may still hold the zone's unsigned DNSKEY answer: publish the DS at the registrar an hour after enabling.");
  lines.push("DS record for the registrar (the parent zone):", ...d.ds_records.map((ds) => `  ${ds}`));
  lines.push(`DNSKEY (KSK): ${d.flags} 3 ${d.algorithm} ${d.public_key}`);
  if (d.rollover)
    lines.push(
      `${d.rollover.key.toUpperCase()} rollover in progress (${d.rollover.stage}); next: ${d.rollover.next_step}, from ${d.rollover.next_step_after}.`,
    );
  ctx.log.info(lines.join("\n"));
}

async function dnssecCall(zoneArg: string, ctx: CliContext, method: string, path = "", json?: unknown): Promise<void> {
  const z = await findZone(zoneArg, ctx);
  const d = await ctx.api().fetchResult<DnssecInfo>(method, `/zones/${z.id}/dnssec${path}`, json === undefined ? {} : { json });
  print(z.name, d, ctx);
}

/** `edgecli dns dnssec status <zone>` */
export async function status(args: { zone?: string }, ctx: CliContext): Promise<void> {
  await dnssecCall(args.zone!, ctx, "GET");
}

/** `edgecli dns dnssec enable <zone>` */
export async function enable(args: { zone?: string }, ctx: CliContext): Promise<void> {
  await dnssecCall(args.zone!, ctx, "PATCH", "", { status: "active" });
}

/** `edgecli dns dnssec disable <zone>`: stops signing, keeps the keys. */
export async function disable(args: { zone?: string }, ctx: CliContext): Promise<void> {
  await dnssecCall(args.zone!, ctx, "PATCH", "", { status: "disabled" });
}

/** `edgecli dns dnssec rollover <zone> --zsk|--ksk`: starts a rollover, or takes its next step once that is safe. */
export async function rollover(args: { zone?: string; zsk?: boolean; ksk?: boolean }, ctx: CliContext): Promise<void> {
  if (!!args.zsk === !!args.ksk) throw new UserError("Say which key to roll: --zsk or --ksk");
  await dnssecCall(args.zone!, ctx, "POST", "/rollover", { key: args.zsk ? "zsk" : "ksk" });
}
