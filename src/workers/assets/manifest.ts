import { blake3 } from "@noble/hashes/blake3.js";
import { extname } from "node:path/posix";
import { AssetsErrors } from "./errors.js";

/** The hosted platform's limits (wrangler 3 checks the first two before uploading too), and this platform's per-version total. */
export const AssetLimits = {
  fileBytes: 25 * 1024 * 1024,
  files: 20_000,
  versionBytes: 1024 * 1024 * 1024,
  pathBytes: 4096,
} as const;

export interface ManifestEntry {
  /** wrangler's content hash: blake3 of the file's base64 text followed by its extension, 32 hex digits. */
  hash: string;
  size: number;
}

/** A Worker version's files, by path ("/", then the path under the assets directory with "/" separators). */
export type AssetManifest = Record<string, ManifestEntry>;

const HASH_RE = /^[0-9a-f]{32}$/;

/** Why a manifest path is refused, if it is: it must be absolute and normal, so it can never name anything outside the directory. */
export function pathProblem(path: string): string | undefined {
  if (!path.startsWith("/")) return "must start with /";
  if (Buffer.byteLength(path) > AssetLimits.pathBytes) return `is longer than ${AssetLimits.pathBytes} bytes`;
  if (/[\0\\]/.test(path) || /[\u0000-\u001f\u007f]/.test(path)) return "contains a control character or a backslash";
  const segments = path.slice(1).split("/");
  if (segments.some((s) => s === "" || s === "." || s === "..")) return 'has an empty, "." or ".." segment';
  return undefined;
}

/** Reads an upload session's `manifest` (wrangler's `{"/path": {hash, size}}`), refusing paths, sizes and counts past the limits. */
export function parseManifest(raw: unknown): AssetManifest {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw AssetsErrors.manifest('must be an object {"/path": {"hash", "size"}}', "/manifest");
  const entries = Object.entries(raw);
  if (entries.length > AssetLimits.files) throw AssetsErrors.tooManyFiles(AssetLimits.files, entries.length);
  const out: AssetManifest = Object.create(null);
  let total = 0;
  for (const [path, entry] of entries) {
    const problem = pathProblem(path);
    if (problem) throw AssetsErrors.manifest(`the path ${JSON.stringify(path.slice(0, 200))} ${problem}`, "/manifest");
    const e = entry as Partial<ManifestEntry> | null;
    if (typeof e !== "object" || e === null || typeof e.hash !== "string" || !HASH_RE.test(e.hash) || !Number.isSafeInteger(e.size) || e.size! < 0) {
      throw AssetsErrors.manifest(`${path}: each file needs "hash" (32 hex digits) and "size" (bytes)`, "/manifest");
    }
    if (e.size! > AssetLimits.fileBytes) throw AssetsErrors.fileTooLarge(path, AssetLimits.fileBytes);
    total += e.size!;
    if (total > AssetLimits.versionBytes) throw AssetsErrors.deployTooLarge(AssetLimits.versionBytes);
    out[path] = { hash: e.hash, size: e.size! };
  }
  return out;
}

const HASH_CHUNK = 1024 * 1024;

/**
 * wrangler's hash of a file from its base64 text and its path's extension; computed a megabyte at a time, yielding
 * to the event loop in between, so a 25 MiB file does not stall other requests.
 */
export async function assetHash(base64: Buffer, path: string): Promise<string> {
  const h = blake3.create();
  for (let at = 0; at < base64.length; at += HASH_CHUNK) {
    h.update(base64.subarray(at, at + HASH_CHUNK));
    if (at + HASH_CHUNK < base64.length) await new Promise<void>((r) => setImmediate(r));
  }
  h.update(Buffer.from(extname(path).slice(1)));
  return Buffer.from(h.digest()).toString("hex").slice(0, 32);
}
