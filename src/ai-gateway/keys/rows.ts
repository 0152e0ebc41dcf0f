import { randomUUID } from "node:crypto";
import type { OpenedProviderKey, ProviderKey } from "./store.js";

/** A provider key as both stores keep it (default_config is 0/1 on both). */
export interface ProviderKeyRow {
  account_id: string;
  gateway_id: string;
  id: string;
  provider_slug: string;
  alias: string;
  default_config: number;
  secret_id: string;
  secret: string;
  modified_at: string;
}

/** The columns an API answer is made of: every one but the sealed secret, which is never read for an answer. */
export const PUBLIC_KEY_COLUMNS = "gateway_id, id, provider_slug, alias, default_config, secret_id, modified_at";

export const toProviderKey = (r: Omit<ProviderKeyRow, "account_id" | "secret">): ProviderKey => ({
  id: r.id,
  gateway_id: r.gateway_id,
  provider_slug: r.provider_slug,
  alias: r.alias,
  default_config: Number(r.default_config) === 1,
  secret_id: r.secret_id,
  modified_at: r.modified_at,
});

export const toOpenedKey = (r: Pick<ProviderKeyRow, "provider_slug" | "alias" | "default_config">, secret: string): OpenedProviderKey => ({
  provider_slug: r.provider_slug,
  alias: r.alias,
  default_config: Number(r.default_config) === 1,
  secret,
});

/** Ids of a new key and of a sealed secret (a replaced secret gets a new one). */
export const newKeyId = () => randomUUID().replaceAll("-", "");
