import { request } from "undici";
import WebSocket from "ws";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";

/** A one-module ES worker as the upload API takes it (multipart: `metadata` and `index.js`). */
async function workerForm(code: string, metadata: Record<string, unknown>): Promise<{ contentType: string; body: Buffer }> {
  const form = new FormData();
  form.append("metadata", JSON.stringify({ main_module: "index.js", compatibility_date: "2024-09-01", ...metadata }));
  form.append("index.js", new Blob([code], { type: "application/javascript+module" }), "index.js");
  const encoded = new Response(form);
  return { contentType: encoded.headers.get("content-type")!, body: Buffer.from(await encoded.arrayBuffer()) };
}

type UploadOptions = { accountId?: string; headers?: Record<string, string>; /** e.g. `?bindings_inherit=strict` */ query?: string };

async function sendWorker(p: TestPlatform, method: "PUT" | "POST", path: string, code: string, metadata: Record<string, unknown>, opts: UploadOptions) {
  const { contentType, body } = await workerForm(code, metadata);
  const res = await request(`${p.apiUrl}/accounts/${opts.accountId ?? p.accountId}/workers/scripts/${path}${opts.query ?? ""}`, {
    method,
    headers: { ...p.headers(), "content-type": contentType, ...opts.headers },
    body,
  });
  return { status: res.statusCode, body: (await res.body.json()) as any };
}

/** Uploads a one-module ES worker through the v4 API, as `edgecli deploy` would. */
export function uploadScript(
  p: TestPlatform,
  name: string,
  code: string,
  metadata: Record<string, unknown> = {},
  opts: UploadOptions = {},
): Promise<{ status: number; body: any }> {
  return sendWorker(p, "PUT", name, code, metadata, opts);
}

/** Uploads a version of a worker without deploying it (`POST …/versions`), as `wrangler versions upload` does. */
export function uploadVersion(
  p: TestPlatform,
  name: string,
  code: string,
  metadata: Record<string, unknown> = {},
  opts: UploadOptions = {},
): Promise<{ status: number; body: any }> {
  return sendWorker(p, "POST", `${name}/versions`, code, metadata, opts);
}

/** Creates another account of the platform's user (with the global key, which reaches it) and returns its id. */
export async function createAccount(p: TestPlatform, name: string): Promise<string> {
  const res = await p.api("POST", "/accounts", { name }, p.keyHeaders());
  if (res.status !== 200) throw new Error(`creating account ${name}: ${JSON.stringify(res.body)}`);
  return res.body.result.id as string;
}

/** Sends a request to a worker through the edge port, addressed by Host like a browser would. */
export async function hit(
  p: TestPlatform,
  script: string,
  path: string,
  opts: { method?: string; body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<{ status: number; text: string; headers: Record<string, string | string[] | undefined> }> {
  const port = new URL(p.url).port;
  const res = await request(`http://127.0.0.1:${port}${path}`, {
    method: (opts.method ?? "GET") as "GET",
    body: opts.body,
    headers: { host: `${script}.workers.localhost:${port}`, ...opts.headers },
  });
  return { status: res.statusCode, text: await res.body.text(), headers: res.headers };
}

/** The structured log lines of the platform, parsed. */
export function logEntries(p: TestPlatform): Record<string, any>[] {
  return p
    .logs()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, any>;
      } catch {
        return {};
      }
    });
}

/** The real platform on free ports only (the DNS listener too), so test files can run side by side. */
export function startPlatform(args: string[] = []): Promise<TestPlatform> {
  return startTestPlatform({ args: ["--dns-port", "0", ...args] });
}

/** Opens a WebSocket to `script` through the edge port, addressed by Host (from `localAddress` when given, one of 127.0.0.0/8); resolves once open, rejects with the refusal's status and text. */
export function openSocket(p: TestPlatform, script: string, path = "/", localAddress?: string): Promise<WebSocket> {
  const port = new URL(p.url).port;
  const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, { headers: { host: `${script}.workers.localhost:${port}` }, localAddress });
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(ws));
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => reject(Object.assign(new Error(`refused with ${res.statusCode}: ${body}`), { status: res.statusCode, body })));
    });
    ws.once("error", reject);
  });
}
