import { durableObjectNamespace, type DurableObjectNamespaceBinding } from "../durable-objects/namespace-binding.js";
import type { BindingType } from "./binding-type.js";
import { d1Database, type D1DatabaseBinding } from "./d1-database.js";
import { kvNamespace, type KvNamespaceBinding } from "./kv-namespace.js";
import { plainText, type PlainTextBinding } from "./plain-text.js";
import { queueProducer, type QueueBinding } from "./queue.js";
import { r2Bucket, type R2BucketBinding } from "./r2-bucket.js";
import { serviceBinding, type ServiceBinding } from "../services/service-binding.js";
import { assetsBinding, type AssetsBinding } from "../assets/assets-binding.js";

/**
 * The binding types this platform has, one file each beside this one. Secrets (`secret_text`) are not among
 * them: their values are kept apart, sealed (see WorkersStore), and reach workerd only through its environment.
 */

/** A binding as a stored script keeps it (the upload's metadata, validated). */
export type Binding =
  R2BucketBinding | KvNamespaceBinding | D1DatabaseBinding | PlainTextBinding | DurableObjectNamespaceBinding | QueueBinding | ServiceBinding | AssetsBinding;

/** Every binding type, in the order errors list them. */
const TYPES: readonly BindingType<Binding>[] = [
  r2Bucket,
  kvNamespace,
  d1Database,
  plainText,
  durableObjectNamespace,
  queueProducer,
  serviceBinding,
  assetsBinding,
];

const byType = new Map(TYPES.map((t) => [t.type, t]));

/** The binding type named `type` in an upload, if this platform has it. */
export function bindingType(type: string): BindingType<Binding> | undefined {
  return byType.get(type as Binding["type"]);
}

/** The type of a stored binding. */
export function typeOf(binding: Binding): BindingType<Binding> {
  return byType.get(binding.type)!;
}

/** The binding types an upload may name, secrets included. */
export const SUPPORTED_BINDING_TYPES: readonly string[] = [...TYPES.map((t) => t.type), "secret_text", "inherit"];
