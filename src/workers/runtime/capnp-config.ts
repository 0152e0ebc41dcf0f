import type { BindingCall } from "../bindings/server.js";
import { durableObjectsWorkerd, type DurableObjectStorageMode } from "../durable-objects/workerd.js";
import { typeOf } from "../bindings/registry.js";
import { capnpString } from "./capnp-string.js";
import type { EntryModule } from "./entry-module.js";
import { QUEUE_SOCKET, queueDispatchService } from "./queue-dispatch.js";
import type { RunnableScript } from "./runtime.js";
import { TAIL_SERVICE, tailWorkerService } from "../tail/tail-worker.js";

/** The header workerd takes the client's protocol from: request.url's scheme (set by the edge, proxy.ts). */
export const FORWARDED_PROTO = "x-forwarded-proto";

/**
 * The header workerd writes a subrequest's `cf` object into (as JSON) on the script's global outbound and Cache API
 * calls (HttpOptions.cfBlobHeader): workerd sets it from the request's `cf` or removes it, so a script cannot forge it.
 */
export const CF_BLOB_HEADER = "x-edge-cf";

/** Where a binding's calls go: the binding server's socket, with the header that identifies the resource. */
export interface BindingTarget {
  address: string;
  header: { name: string; value: string };
  /** The host of workerd's CONNECT requests when the binding also carries RPC sessions (service bindings). */
  connectHost?: string;
}

export interface WorkerdConfigInput {
  run: RunnableScript;
  /** The compatibility date it runs with (the script's, or the runtime's newest when the script asks for a later one). */
  compatibilityDate: string;
  /** Path of each module's file, relative to the config file (written beside it). */
  modulePath(index: number): string;
  /** The module workerd runs first (entry-module.ts), and the path of its file. */
  entry: { module: EntryModule; path: string };
  /** Where the calls of a binding to a backend's resource go. */
  bindingTarget(call: BindingCall): BindingTarget;
  /** Where the script's Durable Objects live in this process (default: on disk). */
  durableObjectStorage?: DurableObjectStorageMode;
  /**
   * The share of invocations the tail worker reports (tail-worker.ts): 1 while someone tails the script, its Workers
   * Logs sampling rate otherwise; 0 or absent: no tail worker (it costs every invocation).
   */
  tailRate?: number;
}

/**
 * The socket "rpc" serves service bindings of other Workers (only the binding server connects to it): their fetch
 * calls, and workerd's Cap'n Proto RPC sessions, opened by a CONNECT to this host.
 */
export const RPC_CONNECT_HOST = "capnp";

const secretVariable = (i: number) => `EDGE_WORKER_SECRET_${i}`;

/**
 * The whole environment of a workerd process running `secrets`: their values under the names the config's
 * fromEnvironment bindings read, and nothing of the platform's own environment (its keys and tokens).
 */
export function secretEnvironment(secrets: readonly { text: string }[]): Record<string, string> {
  return Object.fromEntries(secrets.map((s, i) => [secretVariable(i), s.text]));
}

/**
 * The config of one workerd process running one script: a socket "http" for its traffic, a socket "handlers"
 * for the entry module's handlers entrypoint, one "scheduled" for its cron ticks, a queue consumer's "queue" for its batches, one "rpc" for service bindings (their unix socket paths are given on the command line: each process
 * gets fresh ones), each binding as its type writes it (storage bindings are external services on the binding
 * server), secrets from the process environment (see `secretEnvironment`: they never touch the disk in clear),
 * and a global outbound through the platform (runtime/outbound.ts).
 */
export function workerdConfig(input: WorkerdConfigInput): string {
  const { script, modules, secrets } = input.run;
  const services: string[] = [`(name = "main", worker = .script)`];
  const bindingService = (backend: BindingCall["backend"], resource: string, opts?: { rpc?: boolean }) => {
    const target = input.bindingTarget({ backend, accountId: script.accountId, resource });
    const service = `binding-${services.length}`;
    const rpc = opts?.rpc && target.connectHost ? `, capnpConnectHost = ${capnpString(target.connectHost)}` : "";
    services.push(
      `(name = ${capnpString(service)}, external = (address = ${capnpString(target.address)}, http = (injectRequestHeaders = [(name = ${capnpString(target.header.name)}, value = ${capnpString(target.header.value)})]${rpc})))`,
    );
    return service;
  };
  // The script's own fetch() calls (its global outbound) go to the platform (runtime/outbound.ts) with their URL in
  // the request line: a URL on its zone reaches the origin through the edge's forwarder, anything else goes out to
  // public addresses only, as workerd's own network access did. Its address is a socket of the script's account
  // (bindings/server.ts): workerd's CONNECTs (the script's connect()) carry no header, so the socket labels them.
  const outbound = input.bindingTarget({ backend: "outbound", accountId: script.accountId, resource: script.name });
  services.push(
    `(name = "outbound", external = (address = ${capnpString(outbound.address)}, http = (style = proxy, cfBlobHeader = "${CF_BLOB_HEADER}", injectRequestHeaders = [(name = ${capnpString(outbound.header.name)}, value = ${capnpString(outbound.header.value)})])))`,
  );
  // Its Cache API calls (caches.default, caches.open: GET only-if-cached, PUT of a serialized response, PURGE) go to
  // the platform too (runtime/outbound.ts), labelled with the script's identity: the edge's cache decides the zone.
  const cache = input.bindingTarget({ backend: "cache", accountId: script.accountId, resource: script.name });
  services.push(
    `(name = "cache", external = (address = ${capnpString(cache.address)}, http = (style = proxy, injectRequestHeaders = [(name = ${capnpString(cache.header.name)}, value = ${capnpString(cache.header.value)})])))`,
  );
  const bindings = script.bindings.map((b) => `(name = ${capnpString(b.name)}, ${typeOf(b).workerd(b, { bindingService, scriptName: script.name })})`);
  secrets.forEach((s, i) => bindings.push(`(name = ${capnpString(s.name)}, fromEnvironment = ${capnpString(secretVariable(i))})`));
  // While someone tails the script, every invocation's trace goes to the platform's tail sessions (tail/tail-worker.ts).
  if (input.tailRate) services.push(tailWorkerService(bindingService("tail", script.name), input.tailRate));
  const objects = input.run.durableObjects && durableObjectsWorkerd(input.run.durableObjects, input.durableObjectStorage ?? "disk");
  if (objects) services.push(...objects.services);
  // A queue consumer's only: the dispatcher's flag is experimental, so its process runs with --experimental.
  if (input.run.queueConsumer) services.push(queueDispatchService());
  // workerd takes the first module as the main one: the entry module, which runs the script's main module.
  const mods = [
    `(name = ${capnpString(input.entry.module.name)}, esModule = embed ${capnpString(input.entry.path)})`,
    ...modules.map((m, i) => `(name = ${capnpString(m.name)}, ${m.kind} = embed ${capnpString(input.modulePath(i))})`),
  ];
  const sockets = [
    // The edge says how the client came (proxy.ts edgeRequestHeaders): request.url is https:// for the HTTPS port.
    `(name = "http", http = (forwardedProtoHeader = "${FORWARDED_PROTO}"), service = "main")`,
    `(name = "handlers", http = (), service = (name = "main", entrypoint = ${capnpString(input.entry.module.handlersExport)}))`,
    `(name = "scheduled", http = (), service = (name = "main", entrypoint = ${capnpString(input.entry.module.scheduledExport)}))`,
    ...(input.run.queueConsumer ? [QUEUE_SOCKET] : []),
    `(name = "rpc", http = (capnpConnectHost = "${RPC_CONNECT_HOST}"), service = "main")`,
  ];
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    ${services.join(",\n    ")}
  ],
  sockets = [
    ${sockets.join(",\n    ")}
  ],
);
const script :Workerd.Worker = (
  modules = [
    ${mods.join(",\n    ")}
  ],
  compatibilityDate = ${capnpString(input.compatibilityDate)},
  compatibilityFlags = [${script.compatibilityFlags.map(capnpString).join(", ")}],
  bindings = [
    ${bindings.join(",\n    ")}
  ],
  globalOutbound = "outbound",
  cacheApiOutbound = "cache",
  tails = [${input.tailRate ? capnpString(TAIL_SERVICE) : ""}],${objects ? `\n  ${objects.workerFields}` : ""}
);
`;
}
