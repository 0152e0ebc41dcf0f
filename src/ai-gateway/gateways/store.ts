import type { GatewaySettings } from "./schema.js";

export interface Gateway extends GatewaySettings {
  id: string;
  account_id: string;
  created_at: string;
  modified_at: string;
}

export interface GatewayStore {
  get(accountId: string, id: string): Promise<Gateway | undefined>;
  /** The account's gateways whose id contains `search`, oldest first (then by id), one page of them, and how many match. */
  list(accountId: string, search: string, limit: number, offset: number): Promise<{ items: Gateway[]; total: number }>;
  /** Throws AigErrors.gatewayExists when the account has a gateway of that id. */
  create(accountId: string, id: string, settings: GatewaySettings): Promise<Gateway>;
  /** Replaces every setting; undefined when there is no such gateway. */
  update(accountId: string, id: string, settings: GatewaySettings): Promise<Gateway | undefined>;
  /** Deletes the gateway and all its logs, at once; returns what it was, or undefined when there was none. */
  delete(accountId: string, id: string): Promise<Gateway | undefined>;
}
