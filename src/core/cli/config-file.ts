import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { UserError } from "../errors.js";
import { isPrototypeKey } from "../object-keys.js";

export interface KvNamespaceBinding {
  binding: string;
  id?: string;
  preview_id?: string;
}

export interface R2BucketBinding {
  binding: string;
  bucket_name: string;
  preview_bucket_name?: string;
}

/** A `[[d1_databases]]` entry (wrangler's fields; `migrations_table` defaults to d1_migrations, `migrations_dir` to migrations). */
export interface D1DatabaseConfig {
  binding: string;
  database_name?: string;
  database_id?: string;
  preview_database_id?: string;
  migrations_dir?: string;
  migrations_table?: string;
}

/** The worker project's configuration (edge.toml, or wrangler.toml), resolved for one environment. */
export interface ProjectConfig {
  /** Absolute path of the file read. */
  path: string;
  /** The environment selected with --env, if any. */
  env?: string;
  /** The Worker's name: the env's own `name`, else `<name>-<env>`, else `name`. */
  name?: string;
  /** `name` as written (env section first, then top level), without the `-<env>` suffix. */
  project_name?: string;
  main?: string;
  account_id?: string;
  compatibility_date?: string;
  compatibility_flags: string[];
  vars: Record<string, string>;
  kv_namespaces: KvNamespaceBinding[];
  r2_buckets: R2BucketBinding[];
  d1_databases: D1DatabaseConfig[];
  /**
   * The file's tables as written, for the commands that read more of it than the fields above (`edgecli deploy`
   * checks every section): the top level, and the `[env.<name>]` table when an environment is selected.
   */
  raw: { top: Readonly<Record<string, unknown>>; env?: Readonly<Record<string, unknown>> };
}

export const CONFIG_FILES = ["edge.toml", "wrangler.toml"];

const JS_RESERVED = new Set(
  "break case catch class const continue debugger default delete do else enum export extends false finally for function if implements import in instanceof interface let new null package private protected public return static super switch this throw true try typeof var void while with yield await".split(
    " ",
  ),
);

export function isValidJsIdentifier(s: string): boolean {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(s) && !JS_RESERVED.has(s);
}

/**
 * Why `s` cannot name a binding (vars, secrets, buckets, namespaces), or undefined when it can: a binding is a
 * property of the worker's `env`, so it must be a JavaScript identifier, and not `__proto__`, `constructor` or
 * `prototype`, which would reach the object's prototype instead of being a property of its own.
 */
export function bindingNameProblem(s: string): string | undefined {
  if (!isValidJsIdentifier(s)) return "is not a valid JavaScript identifier";
  if (isPrototypeKey(s)) return "is reserved: __proto__, constructor and prototype cannot name a binding";
  return undefined;
}

/** Finds the config file: --config, else edge.toml then wrangler.toml in the working directory or its parents. */
export function findConfigFile(cwd: string, explicit?: string): string | undefined {
  if (explicit) {
    const p = resolve(cwd, explicit);
    if (!existsSync(p)) throw new UserError(`Could not read the configuration file ${p}: it does not exist`);
    return p;
  }
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    for (const f of CONFIG_FILES) if (existsSync(join(dir, f))) return join(dir, f);
    if (dirname(dir) === dir) return undefined;
  }
}

/** Line (1-based) where `key` is assigned, searched from the header of `table` on; for error messages. */
function lineOf(text: string, key: string, table?: string): number | undefined {
  const lines = text.split(/\r?\n/);
  let start = 0;
  if (table) {
    const idx = lines.findIndex((l) => l.trim().replace(/\s+/g, "") === `[${table}]` || l.trim().replace(/\s+/g, "") === `[[${table}]]`);
    if (idx >= 0) start = idx;
  }
  const re = new RegExp(`^\\s*"?${key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"?\\s*=`);
  for (let i = start; i < lines.length; i++) if (re.test(lines[i])) return i + 1;
  return undefined;
}

type Table = Record<string, unknown>;

class ConfigReader {
  constructor(
    private readonly file: string,
    private readonly text: string,
  ) {}

  fail(key: string, message: string, table?: string): never {
    const line = lineOf(this.text, key.split(".").pop()!, table);
    throw new UserError(`${this.file}${line ? `:${line}` : ""}: "${table ? `${table}.` : ""}${key}" ${message}`);
  }

  str(t: Table, key: string, table?: string): string | undefined {
    const v = t[key];
    if (v === undefined) return undefined;
    if (typeof v !== "string") this.fail(key, `must be a string, got ${typeof v}`, table);
    return v;
  }

  strList(t: Table, key: string, table?: string): string[] {
    const v = t[key];
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((x) => typeof x !== "string")) this.fail(key, "must be an array of strings", table);
    return v as string[];
  }

  vars(t: Table, table?: string): Record<string, string> {
    const v = t.vars;
    if (v === undefined) return {};
    if (typeof v !== "object" || v === null || Array.isArray(v)) this.fail("vars", "must be a table", table);
    const out: Record<string, string> = {};
    for (const [k, val] of Object.entries(v as Table)) {
      const problem = bindingNameProblem(k);
      if (problem) this.fail(k, `${problem}, so it cannot be a binding name`, table ? `${table}.vars` : "vars");
      out[k] = typeof val === "string" ? val : JSON.stringify(val);
    }
    return out;
  }

  tables(t: Table, key: string, table?: string): Table[] {
    const v = t[key];
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((x) => typeof x !== "object" || x === null || Array.isArray(x))) {
      this.fail(key, `must be an array of tables ([[${key}]])`, table);
    }
    return v as Table[];
  }

  binding(entry: Table, section: string): string {
    const b = entry.binding;
    if (typeof b !== "string" || b === "") this.fail("binding", "is required and must be a string", section);
    const problem = bindingNameProblem(b);
    if (problem) this.fail("binding", `"${b}" ${problem}`, section);
    return b;
  }
}

/**
 * Reads and validates the project config for `--env`. Bindings and vars are not inherited by
 * environments (an [env.X] section defines its own); name, main and compatibility settings are.
 */
export async function loadProjectConfig(opts: { cwd: string; configPath?: string; env?: string }): Promise<ProjectConfig | undefined> {
  const file = findConfigFile(opts.cwd, opts.configPath);
  if (!file) return undefined;
  const text = readFileSync(file, "utf8");
  const { parse, TomlError } = await import("smol-toml");
  let doc: Table;
  try {
    doc = parse(text) as Table;
  } catch (e) {
    if (e instanceof TomlError) throw new UserError(`${file}:${e.line}:${e.column}: invalid TOML: ${e.message.split("\n")[0]}`);
    throw e;
  }
  const r = new ConfigReader(file, text);
  let scope: Table = doc;
  let prefix: string | undefined;
  if (opts.env) {
    const envs = (doc.env ?? {}) as Table;
    if (typeof envs !== "object" || Array.isArray(envs) || !Object.hasOwn(envs, opts.env)) {
      throw new UserError(`${file}: no [env.${opts.env}] section; environments defined: ${Object.keys(envs).join(", ") || "none"}`);
    }
    scope = envs[opts.env] as Table;
    prefix = `env.${opts.env}`;
  }
  const inherit = (key: string) => r.str(scope, key, prefix) ?? r.str(doc, key);
  const kv = r.tables(scope, "kv_namespaces", prefix).map((e) => {
    const section = prefix ? `${prefix}.kv_namespaces` : "kv_namespaces";
    const out: KvNamespaceBinding = { binding: r.binding(e, section), id: r.str(e, "id", section), preview_id: r.str(e, "preview_id", section) };
    return out;
  });
  const r2 = r.tables(scope, "r2_buckets", prefix).map((e) => {
    const section = prefix ? `${prefix}.r2_buckets` : "r2_buckets";
    const bucket = r.str(e, "bucket_name", section);
    if (!bucket) r.fail("bucket_name", "is required", section);
    return { binding: r.binding(e, section), bucket_name: bucket as string, preview_bucket_name: r.str(e, "preview_bucket_name", section) };
  });
  const d1 = r.tables(scope, "d1_databases", prefix).map((e) => {
    const section = prefix ? `${prefix}.d1_databases` : "d1_databases";
    const out: D1DatabaseConfig = { binding: r.binding(e, section) };
    for (const key of ["database_name", "database_id", "preview_database_id", "migrations_dir", "migrations_table"] as const) {
      const v = r.str(e, key, section);
      if (v !== undefined) out[key] = v;
    }
    return out;
  });
  const flags = scope.compatibility_flags !== undefined ? r.strList(scope, "compatibility_flags", prefix) : r.strList(doc, "compatibility_flags");
  const projectName = inherit("name");
  let name = projectName;
  // Like wrangler's default: an environment without its own name deploys as <name>-<env>.
  if (opts.env && r.str(scope, "name", prefix) === undefined && name) name = `${name}-${opts.env}`;
  return {
    path: file,
    env: opts.env,
    name,
    project_name: projectName,
    main: inherit("main"),
    account_id: inherit("account_id"),
    compatibility_date: inherit("compatibility_date"),
    compatibility_flags: flags,
    vars: r.vars(scope, prefix),
    kv_namespaces: kv,
    r2_buckets: r2,
    d1_databases: d1,
    raw: { top: doc, env: opts.env ? scope : undefined },
  };
}
