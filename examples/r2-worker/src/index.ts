// The worker of the platform spec (sections 4.5 and 5 D): PUT, GET and DELETE on /<key> map to objects in
// the bucket bound as MY_BUCKET. The script authorizes every request before it touches the bucket.

interface Env {
  MY_BUCKET: R2Bucket;
  AUTH_KEY_SECRET: string;
}

// Minimal shapes of the R2 binding used here (no type package needed to bundle this file).
interface R2Object {
  httpEtag: string;
  body: ReadableStream;
  writeHttpMetadata(headers: Headers): void;
}
interface R2Bucket {
  get(key: string): Promise<R2Object | null>;
  put(key: string, value: ReadableStream | ArrayBuffer | string | null, options?: { httpMetadata?: Headers }): Promise<unknown>;
  delete(key: string): Promise<void>;
}

/** Keys anyone may read with GET. */
const ALLOW_LIST = ["cat-pic.jpg", "hello.txt"];

function hasValidHeader(request: Request, env: Env): boolean {
  return request.headers.get("X-Custom-Auth-Key") === env.AUTH_KEY_SECRET;
}

function authorizeRequest(request: Request, env: Env, key: string): boolean {
  switch (request.method) {
    case "PUT":
    case "DELETE":
      return hasValidHeader(request, env);
    case "GET":
      return ALLOW_LIST.includes(key);
    default:
      return false;
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const key = decodeURIComponent(url.pathname.slice(1));

    if (!["PUT", "GET", "DELETE"].includes(request.method)) {
      return new Response("Method Not Allowed", { status: 405, headers: { Allow: "PUT, GET, DELETE" } });
    }
    if (!authorizeRequest(request, env, key)) {
      return new Response("Forbidden", { status: 403 });
    }

    switch (request.method) {
      case "PUT":
        await env.MY_BUCKET.put(key, request.body, { httpMetadata: request.headers });
        return new Response(`Put ${key} successfully!`);
      case "GET": {
        const object = await env.MY_BUCKET.get(key);
        if (object === null) return new Response("Object Not Found", { status: 404 });
        const headers = new Headers();
        object.writeHttpMetadata(headers);
        headers.set("etag", object.httpEtag);
        return new Response(object.body, { headers });
      }
      default:
        await env.MY_BUCKET.delete(key);
        return new Response("Deleted!");
    }
  },
};
