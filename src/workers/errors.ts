import { EdgeError } from "../core/errors.js";
import type { MultipartErrors } from "../core/http/multipart.js";
import { VersionLimits } from "./store.js";

/** The codes the Workers API answers with (the hosted API's where known). */
export const WorkersCodes = {
  scriptNotFound: 10007,
  serviceNotFound: 10090,
  validation: 10021,
  scriptTooLarge: 10027,
  nameTaken: 10026,
  secretNotFound: 10056,
  /** This platform's own code: no kept version of the Worker has that id. */
  versionNotFound: 10215,
  /**
   * A secret change while a gradual deployment runs (the hosted code: wrangler's `secret put` reads it and tells the
   * user to deploy one version at 100% first).
   */
  versionNotDeployed: 10215,
  /** A rollback past a change of the Worker's secrets, without `?force=true` (wrangler asks and retries with it). */
  secretsChanged: 10220,
  /** A message, not an error: the script runs with an earlier compatibility date than it asked for. */
  compatibilityDateLowered: 10200,
  /** A message, not an error: a part of a request that this platform leaves as it is (it is not configurable here). */
  leftUnchanged: 10201,
  /** The hosted code of a version upload that carries a Durable Object migration. */
  migrationInVersionUpload: 10211,
  /**
   * The hosted code of an `inherit` binding that names nothing in the version it inherits from (with
   * `?bindings_inherit=strict`): wrangler reads the names from messages starting "inherit binding 'NAME' is invalid".
   */
  invalidInheritBinding: 10057,
} as const;

const invalid = (message: string, pointer?: string) => new EdgeError(400, WorkersCodes.validation, message, { pointer });

/** The Workers refusals; every message is written here once. */
export const WorkersErrors = {
  scriptNotFound: () => new EdgeError(404, WorkersCodes.scriptNotFound, "This Worker does not exist on your account."),
  /** The services view of a missing script (what `wrangler deploy` asks first). */
  serviceNotFound: (name: string) => new EdgeError(404, WorkersCodes.serviceNotFound, `Worker ${name} not found`),
  secretNotFound: (name: string) => new EdgeError(404, WorkersCodes.secretNotFound, `This Worker has no secret named ${name}`),

  invalidName: (name: string) =>
    invalid(`Worker name "${name}" is invalid: use 1-63 lowercase letters, digits and hyphens, not starting or ending with a hyphen`),
  nameTaken: (name: string) => new EdgeError(409, WorkersCodes.nameTaken, `The Worker name "${name}" is already in use on this platform; choose another`),
  failedToStart: (reason: string) => invalid(`The Worker failed to start: ${reason}`),
  experimentalFlag: (flag: string, index: number) =>
    invalid(
      `compatibility_flags: "${flag}" is an experimental compatibility flag of workerd, which may change or go away in any release; it is not available here`,
      `/compatibility_flags/${index}`,
    ),
  versionNotFound: (id: string) =>
    new EdgeError(404, WorkersCodes.versionNotFound, `This Worker has no version ${id} (the latest ${VersionLimits.versions} versions are kept)`),
  /** wrangler reads the names after "The following secrets have changed:" (comma-separated) to ask the user. */
  secretsChanged: (names: readonly string[]) =>
    new EdgeError(
      400,
      WorkersCodes.secretsChanged,
      `Cannot deploy this version without ?force=true: its secrets differ from the Worker's now. The following secrets have changed: ${names.join(", ")}`,
    ),
  tooManyDeploymentVersions: (max: number, named: number) => invalid(`A deployment names at most ${max} versions; this one names ${named}`, "/versions"),
  deploymentVersionTwice: (id: string) => invalid(`Version ${id} is named more than once in this deployment`, "/versions"),
  deploymentPercentages: (sum: number) => invalid(`The percentages of a deployment's versions must add up to 100; these add up to ${sum}`, "/versions"),
  secretChangeDuringSplit: () =>
    new EdgeError(
      400,
      WorkersCodes.versionNotDeployed,
      "This Worker runs a gradual deployment of two versions: a secret change makes a new version of the live one, so deploy one version at 100% first (wrangler versions deploy)",
    ),
  versionSwitchWithAssets: () =>
    invalid(
      "This Worker has static assets: here it keeps one version, its latest upload (wrangler deploy), because its files are the Worker's and not each version's; deploying or rolling back to another version, or splitting traffic between versions, is not supported",
    ),
  splitWithDurableObjects: () =>
    invalid(
      "This Worker has Durable Objects: here it runs one version at a time (deploy or roll back to any one version at 100%); splitting traffic between two versions is not supported, because each would run the objects in a workerd of its own and nothing keeps an object on one of them",
    ),
  migrationInVersionUpload: () =>
    new EdgeError(
      400,
      WorkersCodes.migrationInVersionUpload,
      "A version uploaded without deploying it may not carry Durable Object migrations: a migration applies to every version at once, so deploy it with wrangler deploy",
    ),
  versionUploadNotDeployable: (what: string) =>
    invalid(`A version uploaded without deploying it may not carry ${what} here: upload it with wrangler deploy (it deploys at once)`),

  // The upload body.
  notMultipart: () => invalid("A script upload must be multipart/form-data with a `metadata` part and the module parts"),
  /** How `formParts` words a broken or oversized upload body. */
  uploadBody: {
    invalid: (message: string) => invalid(message),
    tooLarge: (message: string) => new EdgeError(413, WorkersCodes.scriptTooLarge, message),
  } satisfies MultipartErrors,
  scriptTooLarge: (limitBytes: number) => new EdgeError(413, WorkersCodes.scriptTooLarge, `The script exceeds the size limit of ${limitBytes} bytes`),
  metadataTwice: () => invalid("The upload has more than one `metadata` part"),
  noMetadata: () => invalid("The upload has no `metadata` part"),
  metadataInBothForms: () => invalid("Send the metadata either as one `metadata` part or as `metadata[...]` fields, not both"),
  metadataNotJson: (detail: string) => invalid(`metadata: not valid JSON (${detail})`),
  /** A bracketed metadata field (`metadata[bindings][][name]`) that cannot be taken; `reason` names the field. */
  metadataField: (reason: string) => invalid(reason),
  serviceWorkerSyntax: () => invalid("Service-worker syntax (body_part) is not supported; upload an ES module worker with main_module"),
  mainModuleRequired: () => invalid("metadata: main_module is required"),
  moduleContentType: (module: string, contentType: string) => invalid(`Module ${module}: unsupported content type "${contentType}"`),
  moduleTwice: (module: string) => invalid(`Module ${module} is given twice`),
  mainModuleNotUploaded: (mainModule: string, uploaded: readonly string[]) =>
    invalid(`main_module "${mainModule}" is not one of the uploaded parts (${uploaded.join(", ") || "none"})`),
  mainModuleNotEsm: (mainModule: string) => invalid(`main_module "${mainModule}" must be an ES module (content type application/javascript+module)`),

  // Bindings and secrets.
  bindingTypeUnsupported: (index: number, type: string, supported: readonly string[]) =>
    invalid(`bindings.${index}: binding type "${type}" is not supported here (supported: ${supported.join(", ")})`),
  bindingNameRepeated: (index: number, name: string) => invalid(`bindings.${index}: the name ${name} is used by more than one binding`),
  bucketMissing: (binding: string, bucket: string) =>
    invalid(`Binding ${binding}: R2 bucket "${bucket}" does not exist in this account; create it first (edgecli r2 bucket create ${bucket})`),
  namespaceMissing: (binding: string, namespaceId: string) => invalid(`Binding ${binding}: KV namespace "${namespaceId}" does not exist in this account`),
  // The hosted Queues code for a queue that does not exist (11000), as wrangler reads it.
  queueMissing: (binding: string, queue: string) =>
    new EdgeError(400, 11000, `Queue "${queue}" of the binding ${binding} does not exist in this account: create it with \`edgecli queues create ${queue}\``),
  databaseMissing: (binding: string, databaseId: string) =>
    invalid(`Binding ${binding}: D1 database "${databaseId}" does not exist in this account; create it first (edgecli d1 create <name>)`),
  bindingNameIsSecret: (binding: string) =>
    invalid(`Binding ${binding}: the name is already used by a secret of this Worker; delete the secret or rename the binding`),
  secretNameIsBinding: (secret: string, bindingType: string) => invalid(`${secret} is already the name of a ${bindingType} binding of this Worker`),
  inheritUnresolved: (binding: string, why: string) =>
    new EdgeError(400, WorkersCodes.invalidInheritBinding, `inherit binding '${binding}' is invalid: ${why}`, { pointer: "/metadata/bindings" }),
  inheritedSecretRenamed: (binding: string, oldName: string) =>
    invalid(
      `inherit binding '${binding}': old_name "${oldName}" is a secret; a secret belongs to the Worker here (not to a version), so it cannot be renamed by a version: put it again under the new name (wrangler secret put ${binding})`,
    ),

  // Cron triggers.
  invalidCron: (index: number, cron: string, why: string) => invalid(`${index}: invalid cron expression "${cron}": ${why}`, `/${index}/cron`),
  schedulesBody: () => invalid('The body must be a JSON array of cron triggers, e.g. [{"cron": "*/5 * * * *"}]'),
  tooManySchedules: (limit: number, wouldHave: number) =>
    invalid(`An account may have at most ${limit} cron triggers across its Workers; this change would make it ${wouldHave}`),

  // Settings this platform does not have: refused, never accepted and ignored.
  settingUnavailable: (field: string, why: string) => invalid(`${field}: ${why}`, `/${field.replaceAll(".", "/")}`),
  workersDomainFixed: (domain: string) =>
    invalid(
      `The workers domain of this platform is ${domain}, set when it starts (edgecli serve --workers-domain); every Worker is served at <name>.${domain}`,
    ),
};

/** The Workers API's messages (the `messages` of a successful answer). */
export const WorkersMessages = {
  compatibilityDateLowered: (asked: string, runsWith: string) => ({
    code: WorkersCodes.compatibilityDateLowered,
    message: `compatibility_date ${asked} is later than this platform's workerd supports; the Worker runs with ${runsWith}`,
  }),
  leftUnchanged: (field: string, why: string) => ({ code: WorkersCodes.leftUnchanged, message: `${field}: ${why}` }),
  deployedAtOnce: (why: string) => ({ code: WorkersCodes.leftUnchanged, message: `This version was deployed at once (100% of traffic): ${why}` }),
};
