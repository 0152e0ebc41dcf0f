import { EdgeError } from "../../core/errors.js";
import { WorkersCodes } from "../errors.js";

const invalid = (message: string, pointer?: string) => new EdgeError(400, WorkersCodes.validation, message, { pointer });

/** The service binding refusals; every message is written here once. */
export const ServiceBindingErrors = {
  missing: (binding: string, service: string) =>
    invalid(`Binding ${binding}: service "${service}" is not a Worker of this account; deploy it first (a Worker of another account cannot be bound)`),
  entrypoint: (binding: string, entrypoint: string) =>
    invalid(
      `Binding ${binding}: entrypoint "${entrypoint}" is not supported: a service binding reaches the bound Worker's default export (fetch and RPC methods of a WorkerEntrypoint class); named entrypoints are not available on this platform yet`,
    ),
  environment: (binding: string) => invalid(`Binding ${binding}: "environment" is not supported (this platform has no service environments)`),
};

/** What a Worker calling through a service binding gets when the bound Worker is not there (deleted since, or restarting too long). */
export const ServiceCallFailures = {
  notDeployed: (service: string) => `The Worker "${service}" bound by this service binding is not deployed in this account\n`,
  notRunning: (service: string) => `The Worker "${service}" bound by this service binding is not running; try again shortly\n`,
};
