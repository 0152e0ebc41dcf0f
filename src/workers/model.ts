/** The shapes a stored worker script is made of; shared by the store, the API and the runtime. */

/** A binding as the upload metadata names it (secrets are kept apart, see WorkersStore). */
export type Binding =
  | { type: "plain_text"; name: string; text: string }
  | { type: "r2_bucket"; name: string; bucket_name: string }
  | { type: "kv_namespace"; name: string; namespace_id: string };

/** How workerd is told to load a module part (derived from the part's content type). */
export type ModuleKind = "esModule" | "commonJsModule" | "text" | "data" | "wasm" | "json";

export interface ModuleRef {
  name: string;
  kind: ModuleKind;
  contentId: string;
  size: number;
}

export interface ScriptRecord {
  accountId: string;
  name: string;
  /** Changes on every upload; reported as the deployment / version id. */
  versionId: string;
  etag: string;
  mainModule: string;
  compatibilityDate: string;
  compatibilityFlags: string[];
  bindings: Binding[];
  modules: ModuleRef[];
  createdOn: string;
  modifiedOn: string;
}

/** A script with everything the runtime needs: its modules' bytes and its secrets' values. */
export interface RunnableScript {
  script: ScriptRecord;
  modules: { name: string; kind: ModuleKind; content: Buffer }[];
  secrets: { name: string; text: string }[];
}

/** Compatibility date used when an upload names none (wrangler's draft worker for `secret put` sends none). */
export const DEFAULT_COMPATIBILITY_DATE = "2024-09-01";

/** Workers API error codes (the hosted API's where known). */
export const WorkerCodes = {
  scriptNotFound: 10007,
  serviceNotFound: 10090,
  validation: 10021,
  scriptTooLarge: 10027,
  nameTaken: 10026,
  secretNotFound: 10056,
  /** A message, not an error: the script runs with an earlier compatibility date than it asked for. */
  compatibilityDateLowered: 10200,
} as const;
