// The v4 API as the dashboard calls it: with the user's own token, kept in sessionStorage only (gone when the
// tab closes, never in a URL or a cookie).
const API = "/client/v4";
export const TOKEN_KEY = "edge-platform.token";

/** The signed-in account (set by the sign-in, cleared by sign-out). */
export const session = { account: undefined };

export class ApiFailure extends Error {}

/** One v4 call; a failed envelope becomes an ApiFailure whose message lists each error with its code. */
export async function api(method, path, body, raw = false) {
  const headers = { authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}` };
  if (body !== undefined && typeof body !== "string") headers["content-type"] = "application/json";
  const res = await fetch(API + path, { method, headers, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) });
  if (raw && res.ok) return res.text();
  const env = await res.json().catch(() => ({ success: false, errors: [{ code: res.status, message: res.statusText }] }));
  if (!res.ok || !env.success) throw new ApiFailure((env.errors ?? []).map((e) => `${e.message} (code ${e.code})`).join("; ") || `HTTP ${res.status}`);
  return env;
}

/** A path under the signed-in account. */
export const acct = (path) => `/accounts/${session.account.id}${path}`;

/** A query of the GraphQL Analytics API (POST /graphql): its `data`, or an ApiFailure with GraphQL's error messages. */
export async function graphql(query, variables) {
  const res = await fetch(`${API}/graphql`, {
    method: "POST",
    headers: { authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}`, "content-type": "application/json" },
    body: JSON.stringify({ query, variables }),
  });
  const body = await res.json().catch(() => ({ data: null, errors: [{ message: `HTTP ${res.status}` }] }));
  if (!res.ok || body.errors?.length) throw new ApiFailure((body.errors ?? []).map((e) => e.message).join("; ") || `HTTP ${res.status}`);
  return body.data;
}
