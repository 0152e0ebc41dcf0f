import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { UserError, type ErrorDetail } from "../errors.js";
import { toCliMessage } from "../errors/render.js";
import { resolveStateDir } from "../state-dir.js";

export interface ApiTarget {
  baseUrl: string;
  headers: Record<string, string>;
  accountId?: string;
  /** Where the credentials came from, for messages. */
  source: string;
}

export const DEFAULT_API_URL = "http://127.0.0.1:8787/client/v4";

/**
 * Where the CLI sends API calls and with which credentials: EDGE_API_URL; EDGE_API_TOKEN, or
 * EDGE_API_KEY + EDGE_EMAIL; else the credentials.json that `edgecli serve` wrote in the default state dir.
 */
export function resolveApiTarget(env: NodeJS.ProcessEnv, cwd: string): ApiTarget {
  const baseUrl = (env.EDGE_API_URL ?? DEFAULT_API_URL).replace(/\/+$/, "");
  const accountId = env.EDGE_ACCOUNT_ID || undefined;
  if (env.EDGE_API_TOKEN) return { baseUrl, headers: { authorization: `Bearer ${env.EDGE_API_TOKEN}` }, accountId, source: "EDGE_API_TOKEN" };
  if (env.EDGE_API_KEY || env.EDGE_EMAIL) {
    if (!env.EDGE_API_KEY || !env.EDGE_EMAIL) throw new UserError("EDGE_API_KEY and EDGE_EMAIL must be set together");
    return { baseUrl, headers: { "x-auth-key": env.EDGE_API_KEY, "x-auth-email": env.EDGE_EMAIL }, accountId, source: "EDGE_API_KEY" };
  }
  const file = findCredentials(env, cwd);
  if (file) {
    const c = JSON.parse(readFileSync(file, "utf8")) as { api_token: string; account_id: string };
    return { baseUrl, headers: { authorization: `Bearer ${c.api_token}` }, accountId: accountId ?? c.account_id, source: file };
  }
  throw new UserError(
    "No credentials: set EDGE_API_TOKEN (or EDGE_API_KEY and EDGE_EMAIL), or run this in (or below) the directory where `edgecli serve` keeps its state (.edge/credentials.json).",
  );
}

/** EDGE_STATE_DIR's credentials.json, else `.edge/credentials.json` in the working directory or the nearest parent. */
function findCredentials(env: NodeJS.ProcessEnv, cwd: string): string | undefined {
  if (env.EDGE_STATE_DIR) {
    const file = join(resolveStateDir(undefined, env, cwd), "credentials.json");
    return existsSync(file) ? file : undefined;
  }
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const file = join(dir, ".edge", "credentials.json");
    if (existsSync(file)) return file;
    if (dirname(dir) === dir) return undefined;
  }
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  json?: unknown;
  body?: Buffer | string | Readable | FormData;
  headers?: Record<string, string>;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable & { json(): Promise<unknown>; text(): Promise<string>; arrayBuffer(): Promise<ArrayBuffer> };
}

/** A v4 answer as the CLI reads it: `result` present once `success` was checked; `messages` optional (other servers may omit it). */
export interface ApiEnvelope<T> {
  success: boolean;
  errors: ErrorDetail[];
  messages?: { code: number; message: string }[];
  result: T;
  result_info?: { page?: number; per_page?: number; total_pages?: number; count?: number; cursor?: string };
}

/** A client of the platform's v4 API, used by every remote CLI command. */
export class ApiClient {
  private account?: string;

  constructor(readonly target: ApiTarget) {
    this.account = target.accountId;
  }

  url(path: string, query?: RequestOptions["query"]): string {
    const u = new URL(this.target.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
    return u.toString();
  }

  /** Sends a request and returns the response as it is (for raw bodies such as KV values and objects). */
  async raw(method: string, path: string, opts: RequestOptions = {}): Promise<RawResponse> {
    const { request } = await import("undici");
    const headers: Record<string, string> = { ...this.target.headers, "user-agent": "edgecli", ...opts.headers };
    let body: RequestOptions["body"] = opts.body;
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers["content-type"] = "application/json";
    }
    try {
      const res = await request(this.url(path, opts.query), { method: method as "GET", headers, body: body as never });
      return { status: res.statusCode, headers: res.headers, body: res.body as unknown as RawResponse["body"] };
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      throw new UserError(
        `Could not reach the Edge API at ${this.target.baseUrl} (${code ?? (e as Error).message}). Is \`edgecli serve\` running? Set EDGE_API_URL to point elsewhere.`,
      );
    }
  }

  /** Sends a request and returns `result` of the v4 envelope; a failure becomes a UserError naming the path and codes. */
  async fetchResult<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    return (await this.fetchEnvelope<T>(method, path, opts)).result;
  }

  async fetchEnvelope<T>(method: string, path: string, opts: RequestOptions = {}): Promise<ApiEnvelope<T>> {
    const res = await this.raw(method, path, opts);
    const text = await res.body.text();
    let env: ApiEnvelope<T>;
    try {
      env = JSON.parse(text) as ApiEnvelope<T>;
    } catch {
      // Show what answered (a proxy's error page, another server): its first line says more than the status alone.
      const start = text.replace(/\s+/g, " ").trim().slice(0, 200);
      throw new UserError(`A request to the Edge API (${path}) failed with status ${res.status} and a body that is not JSON${start ? `: ${start}` : "."}`);
    }
    if (!env.success || res.status >= 400) {
      throw new ApiRequestError(path, res.status, env.errors ?? []);
    }
    return env;
  }

  /** Fetches every page of a paginated list (page/per_page), stopping on an empty or last page. */
  async fetchAllPages<T>(path: string, query: RequestOptions["query"] = {}, perPage = 100): Promise<T[]> {
    const out: T[] = [];
    for (let page = 1; ; page++) {
      const env = await this.fetchEnvelope<T[]>("GET", path, { query: { ...query, page, per_page: perPage } });
      out.push(...env.result);
      const totalPages = env.result_info?.total_pages;
      if (env.result.length === 0 || (totalPages !== undefined ? page >= totalPages : env.result.length < perPage)) return out;
    }
  }

  /** Fetches every page of a cursor-paginated list (result_info.cursor). */
  async fetchAllCursor<T>(path: string, query: RequestOptions["query"] = {}): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | undefined;
    do {
      const env = await this.fetchEnvelope<T[]>("GET", path, { query: { ...query, cursor } });
      out.push(...env.result);
      cursor = env.result_info?.cursor || undefined;
    } while (cursor);
    return out;
  }

  /** The account to act on: EDGE_ACCOUNT_ID, the config's account_id, or the only account the credentials see. */
  async accountId(configured?: string): Promise<string> {
    if (this.account) return this.account;
    if (configured) return (this.account = configured);
    const accounts = await this.fetchAllPages<{ id: string; name: string }>("/accounts", {}, 50);
    if (accounts.length === 1) return (this.account = accounts[0].id);
    if (accounts.length === 0) throw new UserError("These credentials cannot see any account.");
    throw new UserError(
      `These credentials see ${accounts.length} accounts; set EDGE_ACCOUNT_ID to one of:\n${accounts.map((a) => `  ${a.id}  ${a.name}`).join("\n")}`,
    );
  }
}

export class ApiRequestError extends UserError {
  constructor(
    readonly path: string,
    readonly status: number,
    readonly errors: ErrorDetail[],
  ) {
    super(`A request to the Edge API (${path}) failed.\n${toCliMessage({ errors }) || `HTTP ${status}`}`);
  }

  hasCode(code: number): boolean {
    return this.errors.some((e) => e.code === code);
  }
}
