import { defineCommand, type AnyCommand, type CommandAlias, type OptionSpec } from "../core/cli/command.js";
import { lazy } from "../core/cli/lazy.js";

export { serveOptions } from "./config.js";

// Handlers live in ./cli/<group>.js and are imported when their command runs, so `edgecli` starts without them.

const objectPathArg = [{ name: "objectPath", describe: "The destination object path in the form of {bucket}/{key}", required: true }] as const;

/** HTTP metadata flags: long names as the hosted CLI documents them, the short wrangler spellings (--ct, --cc, …) hidden beside them. */
const metadataOptions = {
  "content-type": { type: "string", describe: "A standard MIME type describing the format of the object data" },
  "content-disposition": { type: "string", describe: "Specifies presentational information for the object" },
  "content-encoding": { type: "string", describe: "Specifies what content encodings have been applied to the object" },
  "content-language": { type: "string", describe: "The language the content is in" },
  "cache-control": { type: "string", describe: "Specifies caching behavior along the request/reply chain" },
  expires: { type: "string", describe: "The date and time at which the object is no longer cacheable" },
  ct: { type: "string", describe: "Alias of --content-type", hidden: true },
  cd: { type: "string", describe: "Alias of --content-disposition", hidden: true },
  ce: { type: "string", describe: "Alias of --content-encoding", hidden: true },
  cl: { type: "string", describe: "Alias of --content-language", hidden: true },
  cc: { type: "string", describe: "Alias of --cache-control", hidden: true },
} as const satisfies Record<string, OptionSpec>;

const storageClass = { type: "string", alias: "s", describe: "The storage class: Standard or InfrequentAccess" } as const satisfies OptionSpec;

/** What each of this area's command groups is for, shown by `edgecli <group> --help`. */
export const groups: Record<string, string> = {
  r2: "Manage R2 buckets and objects",
  "r2 bucket": "Create, list and delete buckets",
  "r2 object": "Upload, download and delete objects",
  "r2 bucket notification": "Manage event notification rules for an R2 bucket (messages to a queue when objects change)",
};

/** This area's CLI commands (declared as data; handlers import their heavy parts lazily). */
export const commands: AnyCommand[] = [
  defineCommand({
    path: ["r2", "bucket", "create"],
    describe: "Create a new R2 bucket",
    positionals: [{ name: "name", describe: "The name of the new bucket", required: true }],
    options: {
      location: {
        type: "string",
        describe: "The optional location hint that determines geographic placement of the R2 bucket",
        choices: ["weur", "eeur", "apac", "wnam", "enam", "oc"],
      },
      "storage-class": storageClass,
    },
    examples: ["edgecli r2 bucket create my-bucket"],
    handler: lazy(() => import("./cli/bucket.js"), "createBucket"),
  }),
  defineCommand({
    path: ["r2", "bucket", "list"],
    describe: "List R2 buckets",
    handler: lazy(() => import("./cli/bucket.js"), "listBuckets"),
  }),
  defineCommand({
    path: ["r2", "bucket", "delete"],
    describe: "Delete an R2 bucket (it must be empty)",
    positionals: [{ name: "bucket", describe: "The name of the bucket to delete", required: true }],
    handler: lazy(() => import("./cli/bucket.js"), "deleteBucket"),
  }),
  defineCommand({
    path: ["r2", "bucket", "notification", "create"],
    describe: "Create an event notification rule for an R2 bucket",
    positionals: [{ name: "bucket", describe: "The name of the R2 bucket to create an event notification rule for", required: true }],
    options: {
      "event-types": {
        type: "strings",
        describe: "The type of event(s) that will emit event notifications: object-create, object-delete (repeatable)",
      },
      "event-type": { type: "strings", describe: "Alias of --event-types", hidden: true },
      queue: { type: "string", describe: "The name of the queue that will receive event notification messages" },
      prefix: { type: "string", describe: "The prefix that an object must match to emit event notifications (no wildcards)" },
      suffix: { type: "string", describe: "The suffix that an object must match to emit event notifications (no wildcards)" },
      description: { type: "string", describe: "A description that can be used to identify the event notification rule after creation" },
    },
    examples: ["edgecli r2 bucket notification create my-bucket --event-types object-create --queue uploads --prefix images/"],
    handler: lazy(() => import("./cli/notification.js"), "createRule"),
  }),
  defineCommand({
    path: ["r2", "bucket", "notification", "list"],
    describe: "List event notification rules for an R2 bucket",
    positionals: [{ name: "bucket", describe: "The name of the R2 bucket to get event notification rules for", required: true }],
    options: { json: { type: "boolean", describe: "Print the configuration as JSON" } },
    handler: lazy(() => import("./cli/notification.js"), "listRules"),
  }),
  defineCommand({
    path: ["r2", "bucket", "notification", "delete"],
    describe: "Delete an event notification rule (or every rule of a queue) from an R2 bucket",
    positionals: [{ name: "bucket", describe: "The name of the R2 bucket to delete event notification rules from", required: true }],
    options: {
      queue: { type: "string", describe: "The name of the queue whose rules are deleted (all of them unless --rule is given)" },
      rule: { type: "string", describe: "The ID of the event notification rule to delete" },
    },
    examples: ["edgecli r2 bucket notification delete my-bucket --queue uploads --rule <rule-id>"],
    handler: lazy(() => import("./cli/notification.js"), "deleteRules"),
  }),
  defineCommand({
    path: ["r2", "object", "put"],
    describe: "Create an object in an R2 bucket",
    positionals: objectPathArg,
    options: {
      file: { type: "string", alias: "f", describe: "The path of the file to upload" },
      pipe: { type: "boolean", alias: "p", describe: "Enables the file to be piped in, rather than specified with the --file option" },
      ...metadataOptions,
      "storage-class": storageClass,
    },
    examples: [
      "edgecli r2 object put my-bucket/photos/cat.jpg --file ./cat.jpg --content-type image/jpeg",
      "tar c dir | edgecli r2 object put my-bucket/backup.tar --pipe",
    ],
    handler: lazy(() => import("./cli/object.js"), "putObject"),
  }),
  defineCommand({
    path: ["r2", "object", "get"],
    describe: "Fetch an object from an R2 bucket",
    positionals: objectPathArg,
    options: {
      file: { type: "string", alias: "f", describe: "The destination file to create (default: the key, relative to the current directory)" },
      pipe: { type: "boolean", alias: "p", describe: "Enables the file to be piped to a destination, rather than specified with the --file option" },
    },
    examples: ["edgecli r2 object get my-bucket/photos/cat.jpg --file ./cat.jpg", "edgecli r2 object get my-bucket/backup.tar --pipe | tar x"],
    handler: lazy(() => import("./cli/object.js"), "getObject"),
  }),
  defineCommand({
    path: ["r2", "object", "delete"],
    describe: "Delete an object in an R2 bucket",
    positionals: objectPathArg,
    handler: lazy(() => import("./cli/object.js"), "deleteObject"),
  }),
  defineCommand({
    path: ["r2", "credentials"],
    describe: "Show the S3 endpoint, access key id, secret access key and region of the current API token",
    options: { json: { type: "boolean", describe: "Print as JSON" } },
    examples: ["edgecli r2 credentials", "edgecli r2 credentials --json"],
    handler: lazy(() => import("./cli/credentials.js"), "printCredentials"),
  }),
];
/** Deprecated spellings of this area's command groups. */
export const aliases: CommandAlias[] = [];
