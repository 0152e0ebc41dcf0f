import { defineCommand, type AnyCommand, type OptionSpec } from "../cli/command.js";
import type { AreaCopier, NodeOnlyState } from "./area.js";

export const groups: Record<string, string> = {
  state: "Move the platform's state between a state directory (embedded) and PostgreSQL + an S3-compatible bucket",
};

export const copyOptions = {
  "from-state-dir": { type: "string", describe: "Copy from this embedded state directory (SQLite files and content files)" },
  "to-database-url": { type: "string", describe: "... into this PostgreSQL database (postgres://USER:PASSWORD@HOST:5432/DB)" },
  "to-object-store-url": {
    type: "string",
    describe: "... and this bucket for bodies (s3://BUCKET?endpoint=URL&region=R; AWS credentials from the SDK's chain)",
  },
  "from-database-url": { type: "string", describe: "Copy from this PostgreSQL database ..." },
  "from-object-store-url": { type: "string", describe: "... and this bucket ..." },
  "to-state-dir": { type: "string", describe: "... into this state directory (made when missing)" },
  "into-non-empty": {
    type: "boolean",
    describe:
      "Copy into a target that holds rows already: rows it has (same key) are left as they are. Run the same command again with it to finish an interrupted copy",
  },
  "leave-behind": {
    type: "boolean",
    describe:
      "Into PostgreSQL: copy although the state directory holds what the platform keeps on one machine only (D1, Durable Objects, DNSSEC keys, zone transfer settings); those stay in the state directory and are not served by the nodes",
  },
} satisfies Record<string, OptionSpec>;

/**
 * `edgecli state copy`. Core does not know the areas: `copiers` (src/state-copiers.ts) is handed in by
 * src/commands.ts, as `edgecli serve`'s runner is.
 */
export function stateCommands(areas: () => Promise<{ copiers: readonly AreaCopier[]; nodeOnly: readonly NodeOnlyState[] }>): AnyCommand[] {
  return [
    defineCommand({
      path: ["state", "copy"],
      describe: "Copy every area's state from a state directory into PostgreSQL + a bucket, or back; with the platform stopped",
      options: copyOptions,
      examples: [
        "edgecli state copy --from-state-dir /var/lib/edge --to-database-url postgres://edge:PASSWORD@db:5432/edge --to-object-store-url 's3://edge-content?endpoint=http://rgw:7480&region=us-east-1'",
        "edgecli state copy --from-database-url postgres://edge:PASSWORD@db:5432/edge --from-object-store-url 's3://edge-content?endpoint=http://rgw:7480&region=us-east-1' --to-state-dir /var/lib/edge-single",
      ],
      epilogue: [
        "Areas copied: identity (accounts, users, global keys and API tokens, as their hashes), KV (namespaces, entries, values), R2 (buckets, objects and their bodies, multipart uploads under way, CORS rules), Workers (scripts and their modules, secrets still sealed, cron schedules), static assets, Queues (queues, consumers, waiting messages), the AI gateway (gateways and logs).",
        "Not carried, because the nodes have no store for them yet: D1 databases, Durable Objects, DNSSEC keys and zone transfer settings. A copy into PostgreSQL refuses while the state directory holds any, naming them, unless --leave-behind is given.",
        "Stop the platform first: the command refuses a state directory an edgecli serve runs on, and a database platform nodes are connected to.",
        "The target must be empty unless --into-non-empty is given; an interrupted copy is finished by running the same command again with --into-non-empty (rows already copied are left as they are; bodies copied for rows that never were are removed by the target's garbage collection).",
        "Bodies are streamed (memory stays bounded). A progress bar is drawn on a terminal, progress lines are written otherwise; at the end each table's rows are counted on both sides, and a difference is an error (exit code 1).",
        "Worker secrets stay sealed as they are: every node must use the key that sealed them. Into PostgreSQL, set EDGE_SECRETS_KEY to the content of <state-dir>/keys/secrets.key (the command checks it); into a state directory, set EDGE_SECRETS_KEY to the nodes' key (the command writes it to <state-dir>/keys/secrets.key).",
      ].join("\n"),
      handler: async (args, ctx) => {
        const { copiers, nodeOnly } = await areas();
        return (await import("./cli.js")).stateCopy(args, ctx, copiers, nodeOnly);
      },
    }),
  ];
}
