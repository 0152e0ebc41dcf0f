import { EdgeError } from "../../core/errors.js";
import { WorkersCodes } from "../errors.js";

const invalid = (message: string, pointer?: string) => new EdgeError(400, WorkersCodes.validation, message, { pointer });

/** The Durable Objects refusals; every message is written here once. */
export const DurableObjectsErrors = {
  namespaceNotFound: () => new EdgeError(404, 10066, "This Durable Object namespace does not exist on your account."),
  otherScript: (binding: string, script: string, className: string) =>
    invalid(
      `Binding ${binding}: class ${className} belongs to another Worker (script_name "${script}"), and binding another Worker's Durable Object class is not supported here: each Worker runs in its own workerd process and an object may only ever have one instance, which only the process of the Worker exporting the class can ensure. Bind the class in "${script}" itself and reach that Worker from this one (for example through a service binding)`,
    ),
  noClassInScript: (binding: string, script: string, className: string) =>
    invalid(`Binding ${binding}: script_name "${script}" names no Worker of this account with a Durable Object class ${className}`),
  environment: (binding: string) => invalid(`Binding ${binding}: "environment" is not supported (this platform has no service environments)`),
  noNamespace: (binding: string, className: string) =>
    invalid(
      `Binding ${binding}: class ${className} has no Durable Object namespace in this Worker; create it with a migration (new_sqlite_classes = ["${className}"] or new_classes = ["${className}"])`,
    ),
  tagMismatch: (current: string | undefined, oldTag: string | undefined) =>
    invalid(
      current === undefined
        ? `migrations: old_tag "${oldTag}" was given, but this Worker has no migrations applied yet (leave old_tag out)`
        : `migrations: this Worker's migrations are at tag "${current}", but the upload's old_tag is ${oldTag === undefined ? "missing" : `"${oldTag}"`}; send old_tag = "${current}" and only the steps after it`,
      "/migrations/old_tag",
    ),
  classExists: (step: number, className: string) =>
    invalid(`migrations: step ${step}: class ${className} already has a Durable Object namespace in this Worker`, `/migrations/steps/${step}`),
  classMissing: (step: number, className: string, what: string) =>
    invalid(`migrations: step ${step}: cannot ${what} class ${className}: it has no Durable Object namespace in this Worker`, `/migrations/steps/${step}`),
  transferNotSupported: (step: number) =>
    invalid(`migrations: step ${step}: transferred_classes (moving a class between Workers) is not supported by this platform`, `/migrations/steps/${step}`),
  tooManyNamespaces: (limit: number) => invalid(`A Worker may have at most ${limit} Durable Object classes`),
  distributed: () =>
    invalid(
      "Durable Objects are not available when the platform runs on several nodes (--database-url): an object must have exactly one instance across the cluster, which this platform cannot guarantee yet; run the platform embedded (one node) to use them",
    ),
};
