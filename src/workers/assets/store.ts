import type { Readable } from "node:stream";
import type { AssetManifest } from "./manifest.js";

/** How the files of a Worker are served (wrangler's `[assets]` options; `assets.config` of the upload). */
export interface AssetConfig {
  html_handling: "auto-trailing-slash" | "force-trailing-slash" | "drop-trailing-slash" | "none";
  not_found_handling: "single-page-application" | "404-page" | "none";
  run_worker_first: boolean;
}

/** An upload session: the manifest a client announced, for one Worker of one account, until it expires. */
export interface UploadSession {
  accountId: string;
  script: string;
  manifest: AssetManifest;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

/** One stored file body of an account, by its hash. */
export interface AssetBody {
  contentId: string;
  /** As the uploader gave it; null: answered without a Content-Type. */
  contentType: string | null;
  size: number;
}

/** A stored body as garbage collection sees it (collect.ts). */
export interface BodyState {
  accountId: string;
  hash: string;
  /** When a collection first found no manifest naming it (ms since the epoch); null: named when last looked at. */
  orphanedAt: number | null;
}

/** The files a Worker serves now, with its options. */
export interface ScriptAssets {
  manifest: AssetManifest;
  config: AssetConfig;
}

/**
 * Static assets: upload sessions (by the hash of their token: the token is a bearer credential and is never stored),
 * file bodies (in the content store, one per account and hash, so an unchanged file is not uploaded again), and the
 * manifest and options of each Worker that has assets. Bodies belong to an account: another account's identical file is
 * stored again, so no account learns what another has.
 */
export interface AssetsStore {
  createSession(tokenHash: string, session: UploadSession): Promise<void>;
  /** A session that has not expired. */
  session(tokenHash: string): Promise<UploadSession | undefined>;
  /** The characters of JSON the manifests of an account's sessions that have not expired add up to. */
  liveManifestChars(accountId: string): Promise<number>;
  /** The bodies of `hashes` the account has. */
  bodies(accountId: string, hashes: readonly string[]): Promise<Map<string, AssetBody>>;
  /** Stores a body (a body the account already has under that hash is kept as it is). */
  putBody(accountId: string, hash: string, contentType: string | null, bytes: Buffer): Promise<void>;
  readBody(contentId: string): Readable;
  scriptAssets(accountId: string, script: string): Promise<ScriptAssets | undefined>;
  /** Replaces a Worker's assets (undefined: it has none). */
  setScriptAssets(accountId: string, script: string, assets: ScriptAssets | undefined): Promise<void>;
  /** The manifests whose bodies must stay: every Worker's, and those of upload sessions that have not expired. */
  manifestsInUse(): Promise<{ accountId: string; manifest: AssetManifest }[]>;
  /** Every stored body, with when it was first found unused. */
  bodyStates(): Promise<BodyState[]>;
  /** Records that these bodies were found unused at `at`, or (null) used again. */
  markOrphaned(bodies: readonly { accountId: string; hash: string }[], at: number | null): Promise<void>;
  /**
   * Removes a body, row then content, if it is still unused since `orphanedAt` (a later upload or use changed that);
   * true when it did.
   */
  removeBody(accountId: string, hash: string, orphanedAt: number): Promise<boolean>;
}
