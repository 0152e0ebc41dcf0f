import type { TestPlatform } from "./platform.js";

/** The property names that reach `Object.prototype` (or a constructor's) when used as keys of a plain object. */
export const PROTOTYPE_KEYS = ["__proto__", "constructor", "prototype"] as const;

/** Creates another account for the bootstrap user (global key auth) and returns its id. */
export async function createAccount(p: TestPlatform, name: string): Promise<string> {
  const res = await fetch(`${p.apiUrl}/accounts`, {
    method: "POST",
    headers: { "x-auth-email": p.email, "x-auth-key": p.apiKey, "content-type": "application/json" },
    body: JSON.stringify({ name }),
  });
  const body = (await res.json()) as { result?: { id?: string } };
  if (res.status !== 200 || !body.result?.id) throw new Error(`account ${name}: ${res.status} ${JSON.stringify(body)}`);
  return body.result.id;
}

/** Sends a multipart/form-data body built by the platform's own FormData encoder; answers status and parsed JSON. */
export async function sendForm(p: TestPlatform, method: string, path: string, form: FormData): Promise<{ status: number; body: any }> {
  const encoded = new Response(form);
  return sendRaw(p, method, path, Buffer.from(await encoded.arrayBuffer()), encoded.headers.get("content-type")!);
}

/** Sends raw bytes with the given content type (for malformed bodies no encoder would produce). */
export async function sendRaw(
  p: TestPlatform,
  method: string,
  path: string,
  body: Buffer | string,
  contentType?: string,
): Promise<{ status: number; body: any }> {
  const { request } = await import("undici");
  const res = await request(p.apiUrl + path, {
    method: method as "PUT",
    headers: p.headers(contentType === undefined ? {} : { "content-type": contentType }),
    body,
  });
  const text = await res.body.text();
  try {
    return { status: res.statusCode, body: JSON.parse(text) };
  } catch {
    return { status: res.statusCode, body: text };
  }
}
