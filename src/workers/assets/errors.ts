import { EdgeError } from "../../core/errors.js";
import { WorkersCodes } from "../errors.js";

const invalid = (message: string, pointer?: string) => new EdgeError(400, WorkersCodes.validation, message, { pointer });

/** The static assets refusals; every message is written here once. */
export const AssetsErrors = {
  manifest: (message: string, pointer?: string) => invalid(`assets manifest: ${message}`, pointer),
  tooManyFiles: (limit: number, given: number) =>
    invalid(`assets manifest: at most ${limit.toLocaleString("en-US")} files per Worker version, ${given.toLocaleString("en-US")} given`),
  fileTooLarge: (path: string, limit: number) => invalid(`assets manifest: ${path} is larger than the ${limit / 1024 / 1024} MiB a file may have`, "/manifest"),
  deployTooLarge: (limit: number) =>
    invalid(`assets manifest: the files add up to more than the ${limit / 1024 / 1024} MiB one Worker version may have`, "/manifest"),
  tooManySessions: () =>
    new EdgeError(
      429,
      WorkersCodes.validation,
      "assets: the account has too many upload sessions in progress (their manifests are held until they expire, an hour after they start); deploy or wait",
    ),
  badToken: () =>
    new EdgeError(401, 10001, "The assets upload token is missing, invalid or expired; start a new upload session (POST …/assets-upload-session)"),
  notInSession: (hash: string) => invalid(`assets upload: ${hash} is not a file of this upload session's manifest`),
  hashMismatch: (hash: string) => invalid(`assets upload: the content sent for ${hash} does not have that hash`),
  sizeMismatch: (hash: string, expected: number, got: number) =>
    invalid(`assets upload: the content sent for ${hash} is ${got} bytes, the manifest says ${expected}`),
  notBase64: () => invalid("assets upload: only base64=true uploads are supported (each part's content base64-encoded)"),
  notBase64Content: (hash: string) => invalid(`assets upload: the content sent for ${hash} is not base64`),
  incomplete: (missing: number) =>
    invalid(
      `assets: ${missing} file${missing === 1 ? "" : "s"} of the upload session's manifest ${missing === 1 ? "was" : "were"} not uploaded; upload them before the Worker`,
    ),
  sessionOtherScript: (script: string) => invalid(`assets: the upload token was issued for the Worker "${script}", not this one`, "/assets/jwt"),
  config: (message: string) => invalid(`assets.config: ${message}`, "/assets/config"),
  bindingWithoutAssets: (name: string) =>
    invalid(`Binding ${name}: an assets binding needs assets uploaded with the Worker (metadata "assets": {"jwt": …}, see …/assets-upload-session)`),
};
