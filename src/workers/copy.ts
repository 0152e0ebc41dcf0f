import type { AreaCopier, NodeOnlyState } from "../core/state-copy/area.js";
import { WORKERS_PG_MIGRATIONS } from "./pg-migrations.js";
import { WORKERS_MIGRATIONS } from "./sqlite-migrations.js";
import type { ModuleRef } from "./store.js";

/**
 * Workers for `edgecli state copy`: scripts (their current version, module bytes streamed into the target's content
 * store), their kept versions (module bytes likewise) and deployments, secrets and cron schedules. Secrets are carried sealed, as they are: the target must open them with the
 * same key (`EDGE_SECRETS_KEY`; the command checks it). SQLite marks its sealed secrets (`sealed = 1`, every one
 * since the store sealed those written before); a secret not sealed yet is refused rather than carried in clear.
 */
/** A row naming modules, with each module's bytes copied into the target's content store (a version and the live script each get their copy). */
const copyModules: NonNullable<AreaCopier["tables"][number]["copyContent"]> = async (row, content) => {
  const modules = JSON.parse(row.modules as string) as ModuleRef[];
  const copied: ModuleRef[] = [];
  for (const m of modules) copied.push({ ...m, contentId: await content.copy(m.contentId) });
  return { ...row, modules: JSON.stringify(copied) };
};

export const workersCopier: AreaCopier = {
  name: "workers",
  sqlite: { database: "workers", migrations: WORKERS_MIGRATIONS },
  postgres: { schema: "workers", migrations: WORKERS_PG_MIGRATIONS },
  content: "workers",
  tables: [
    {
      table: "scripts",
      columns: [
        "account_id",
        "name",
        "version_id",
        "etag",
        "main_module",
        "compatibility_date",
        "compatibility_flags",
        "bindings",
        "modules",
        "created_on",
        "modified_on",
        "tags",
      ],
      key: ["account_id", "name"],
      copyContent: copyModules,
    },
    {
      table: "versions",
      columns: [
        "account_id",
        "script",
        "id",
        "number",
        "etag",
        "main_module",
        "compatibility_date",
        "compatibility_flags",
        "bindings",
        "modules",
        "secrets",
        "triggered_by",
        "message",
        "tag",
        "source",
        "author",
        "created_on",
      ],
      key: ["account_id", "script", "id"],
      copyContent: copyModules,
    },
    {
      table: "deployments",
      columns: ["account_id", "script", "id", "seq", "versions", "triggered_by", "message", "source", "author", "created_on"],
      key: ["account_id", "script", "id"],
    },
    {
      table: "secrets",
      columns: ["account_id", "script", "name", "value"],
      key: ["account_id", "script", "name"],
      readAs: { sqlite: { value: "CASE WHEN sealed = 1 THEN value END" } },
      writeAs: { sqlite: { sealed: 1 } },
      async copyContent(row) {
        if (row.value === null) {
          throw new Error(
            `the secret ${String(row.name)} of the worker ${String(row.script)} is not sealed yet: start edgecli serve once on the state directory (it seals them), stop it, then copy`,
          );
        }
        return row;
      },
    },
    {
      table: "schedules",
      columns: ["account_id", "script", "cron", "created_on", "modified_on", "last_tick"],
      key: ["account_id", "script", "cron"],
    },
  ],
};

/** Durable Objects need one instance per object across nodes, which nothing provides yet: `edgecli state copy` cannot carry them. */
export const workersNodeOnly: readonly NodeOnlyState[] = [
  { database: "durable-objects", count: "SELECT count(*) AS n FROM namespaces", what: "Durable Object namespaces (with their objects' storage)" },
];
