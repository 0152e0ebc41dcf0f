import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ACCOUNT_ID_RE, EMAIL_RE, hashSecret, KEY_RE, newApiToken, newGlobalKey, secretMatches, TOKEN_RE } from "./credentials.js";
import { ALL_PERMISSIONS } from "./permissions.js";
import { newId } from "./credentials.js";
import type { IdentityStore } from "./store.js";
import { UserError } from "../errors.js";

export interface BootstrapResult {
  account_id: string;
  email: string;
  api_key: string;
  api_token: string;
  api_token_id: string;
}

export const CREDENTIALS_FILE = "credentials.json";

function fromEnv(name: string, re: RegExp, env: NodeJS.ProcessEnv): string | undefined {
  const v = env[name];
  if (v === undefined || v === "") return undefined;
  if (!re.test(v)) throw new UserError(`${name} has an invalid format (expected ${re.source})`);
  return v;
}

const DEFAULT_EMAIL = "admin@edge.local";

/**
 * On the first start with an empty state directory: one account, one user, a global key and a token with
 * every permission on that account. The secrets exist in clear only in the returned value and in credentials.json (0600).
 *
 * `shared`: the store is a database other nodes share (the caller holds a cluster-wide lock meanwhile). Only the
 * node that finds it empty creates (and prints) the credentials; a later node given EDGE_BOOTSTRAP_* values
 * checks that they are the ones the database holds, and refuses to start when they differ.
 */
export async function bootstrapIdentity(
  store: IdentityStore,
  stateDir: string,
  env: NodeJS.ProcessEnv = process.env,
  opts: { shared?: boolean } = {},
): Promise<BootstrapResult | undefined> {
  if (!(await store.isEmpty())) {
    if (opts.shared) await checkSameBootstrap(store, env);
    return undefined;
  }
  const accountId = fromEnv("EDGE_BOOTSTRAP_ACCOUNT_ID", ACCOUNT_ID_RE, env) ?? newId();
  const email = fromEnv("EDGE_BOOTSTRAP_EMAIL", EMAIL_RE, env) ?? DEFAULT_EMAIL;
  const apiKey = fromEnv("EDGE_BOOTSTRAP_API_KEY", KEY_RE, env) ?? newGlobalKey();
  const apiToken = fromEnv("EDGE_BOOTSTRAP_API_TOKEN", TOKEN_RE, env) ?? newApiToken();
  const account = await store.createAccount("Default account", accountId);
  const user = await store.createUser(email);
  await store.addMembership(user.id, account.id);
  await store.setGlobalKey(user.id, apiKey);
  const token = await store.createToken({
    id: newId(),
    user_id: user.id,
    name: "bootstrap token (all permissions)",
    // The account itself, not "*": an account created later is reached by the global key, not by this token.
    grants: [{ account_id: account.id, permissions: [...ALL_PERMISSIONS] }],
    not_before: null,
    expires_on: null,
    value: apiToken,
  });
  const result = { account_id: account.id, email, api_key: apiKey, api_token: apiToken, api_token_id: token.id };
  const file = join(stateDir, CREDENTIALS_FILE);
  if (!existsSync(file)) {
    writeFileSync(file, JSON.stringify(result, null, 2) + "\n", { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  return result;
}

/** Refuses EDGE_BOOTSTRAP_* values that are not what the shared database was set up with. */
async function checkSameBootstrap(store: IdentityStore, env: NodeJS.ProcessEnv): Promise<void> {
  const differ: string[] = [];
  const accountId = fromEnv("EDGE_BOOTSTRAP_ACCOUNT_ID", ACCOUNT_ID_RE, env);
  if (accountId && !(await store.getAccount(accountId))) differ.push("EDGE_BOOTSTRAP_ACCOUNT_ID");
  const givenEmail = fromEnv("EDGE_BOOTSTRAP_EMAIL", EMAIL_RE, env);
  const user = await store.findUserByEmail(givenEmail ?? DEFAULT_EMAIL);
  if (givenEmail && !user) differ.push("EDGE_BOOTSTRAP_EMAIL");
  const key = fromEnv("EDGE_BOOTSTRAP_API_KEY", KEY_RE, env);
  if (key) {
    const stored = user && (await store.globalKeyHash(user.id));
    if (!stored || !secretMatches(key, stored)) differ.push("EDGE_BOOTSTRAP_API_KEY");
  }
  const token = fromEnv("EDGE_BOOTSTRAP_API_TOKEN", TOKEN_RE, env);
  if (token && !(await store.findTokenByHash(hashSecret(token)))) differ.push("EDGE_BOOTSTRAP_API_TOKEN");
  if (differ.length > 0) {
    throw new UserError(
      `The database was set up by another node with a different ${differ.join(", ")}. Start this node with the values the first node used, or without ${differ.length > 1 ? "them" : "it"}.`,
    );
  }
}
