import type { ApiClient } from "../../core/cli/api-client.js";
import { ApiRequestError } from "../../core/cli/api-client.js";
import { KvCodes } from "../errors.js";
import type { KvBulkEntry, KvKeyInfo, KvPutOptions } from "../store.js";
import type { KvCliBackend } from "./backend.js";

/** Requests per bulk call: small enough that a progress bar moves, large enough to stay cheap. */
const BULK_BATCH = 1000;

/** A namespace behind the v4 API of a running platform. */
export class RemoteKvBackend implements KvCliBackend {
  readonly where = "remote";
  private readonly base: string;

  constructor(
    private readonly api: ApiClient,
    accountId: string,
    namespaceId: string,
  ) {
    this.base = `/accounts/${encodeURIComponent(accountId)}/storage/kv/namespaces/${encodeURIComponent(namespaceId)}`;
  }

  private valuePath(key: string): string {
    return `${this.base}/values/${encodeURIComponent(key)}`;
  }

  async put(key: string, value: Buffer, opts: KvPutOptions): Promise<void> {
    const query = { expiration: opts.expiration, expiration_ttl: opts.expirationTtl };
    if (opts.metadata === undefined) {
      await this.api.fetchResult("PUT", this.valuePath(key), { query, body: value, headers: { "content-type": "application/octet-stream" } });
      return;
    }
    const form = new FormData();
    form.set("value", new Blob([value]), "blob");
    form.set("metadata", JSON.stringify(opts.metadata));
    await this.api.fetchResult("PUT", this.valuePath(key), { query, body: form });
  }

  async get(key: string): Promise<Buffer | null> {
    const path = this.valuePath(key);
    const res = await this.api.raw("GET", path);
    if (res.status === 200) return Buffer.from(await res.body.arrayBuffer());
    const text = await res.body.text();
    let errors: { code: number; message: string }[] = [];
    try {
      errors = (JSON.parse(text) as { errors?: typeof errors }).errors ?? [];
    } catch {
      // not an envelope; report the status alone
    }
    const err = new ApiRequestError(path, res.status, errors);
    if (res.status === 404 && err.hasCode(KvCodes.keyNotFound)) return null;
    throw err;
  }

  list(prefix?: string): Promise<KvKeyInfo[]> {
    return this.api.fetchAllCursor<KvKeyInfo>(`${this.base}/keys`, { prefix: prefix ?? "" });
  }

  async delete(key: string): Promise<void> {
    await this.api.fetchResult("DELETE", this.valuePath(key));
  }

  async putMany(entries: readonly KvBulkEntry[], progress: (done: number) => void): Promise<void> {
    for (let i = 0; i < entries.length; i += BULK_BATCH) {
      const batch = entries.slice(i, i + BULK_BATCH).map((e) => ({
        key: e.key,
        value: e.value.toString("base64"),
        base64: true,
        expiration: e.expiration,
        expiration_ttl: e.expirationTtl,
        metadata: e.metadata,
      }));
      await this.api.fetchResult("PUT", `${this.base}/bulk`, { json: batch });
      progress(Math.min(entries.length, i + BULK_BATCH));
    }
  }

  async deleteMany(keys: readonly string[], progress: (done: number) => void): Promise<void> {
    for (let i = 0; i < keys.length; i += BULK_BATCH) {
      await this.api.fetchResult("POST", `${this.base}/bulk/delete`, { json: keys.slice(i, i + BULK_BATCH) });
      progress(Math.min(keys.length, i + BULK_BATCH));
    }
  }

  close(): void {}
}
