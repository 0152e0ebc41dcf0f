/**
 * A provider key stored on a gateway (the hosted API's "provider config"), as the API shows it: never its secret.
 * `secret_id` names the sealed secret; it changes when the secret is replaced.
 */
export interface ProviderKey {
  id: string;
  gateway_id: string;
  provider_slug: string;
  alias: string;
  default_config: boolean;
  secret_id: string;
  modified_at: string;
}

/** A stored key with its secret opened, for the proxy's keyring only (keys/keyring.ts), never for an API answer. */
export interface OpenedProviderKey {
  provider_slug: string;
  alias: string;
  default_config: boolean;
  secret: string;
}

export type NewProviderKey = Pick<ProviderKey, "provider_slug" | "alias" | "default_config">;

/**
 * Provider keys of a gateway. Every backend keeps these promises (store.contract.ts):
 * - A key belongs to one gateway of one account; a key is only added to a gateway that exists (else
 *   `AigErrors.gatewayNotFound`), and deleting the gateway deletes its keys with it.
 * - A provider and alias name one key of a gateway (`AigErrors.providerKeyExists` otherwise); at most
 *   `limit` keys per gateway (`AigErrors.tooManyProviderKeys`). At most one key per provider is its default:
 *   adding a default takes the flag from the one before, in the same transaction.
 * - The secret is sealed with the platform's secrets key (`SecretBox`), bound to its row, and never returned by a
 *   method that feeds an API answer; only `opened` opens it.
 * - Every change is announced to the other nodes (PostgreSQL) when it commits, as a gateway change is.
 */
export interface ProviderKeyStore {
  /** A gateway's keys, by provider then alias. */
  list(accountId: string, gatewayId: string): Promise<ProviderKey[]>;
  get(accountId: string, gatewayId: string, id: string): Promise<ProviderKey | undefined>;
  create(accountId: string, gatewayId: string, key: NewProviderKey, secret: string, limit: number): Promise<ProviderKey>;
  /** Replaces the secret (only the secret can change, as hosted); undefined when there is no such key. */
  replaceSecret(accountId: string, gatewayId: string, id: string, secret: string): Promise<ProviderKey | undefined>;
  delete(accountId: string, gatewayId: string, id: string): Promise<ProviderKey | undefined>;
  /** Every key of the gateway with its secret opened (for the proxy's keyring). */
  opened(accountId: string, gatewayId: string): Promise<OpenedProviderKey[]>;
}

/** What a sealed provider key is bound to: its row, so that a value copied to another row or gateway does not open. */
export const providerKeySealContext = (accountId: string, gatewayId: string, id: string) => `ai-gateway/${accountId}/${gatewayId}/${id}`;
