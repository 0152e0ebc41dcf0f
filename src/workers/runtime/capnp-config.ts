import type { Binding, RunnableScript } from "../model.js";

export type StorageBinding = Exclude<Binding, { type: "plain_text" }>;

/** Where a binding's calls go: the binding server's socket, with the header that identifies the resource. */
export interface BindingTarget {
  address: string;
  header: { name: string; value: string };
}

/**
 * A capnp text string literal. Everything outside printable ASCII (and the quote and backslash) is written
 * as \xNN bytes of its UTF-8 form, so no value (a secret, a var) can end the string or break the config.
 */
export function capnpString(s: string): string {
  let out = '"';
  for (const b of Buffer.from(s, "utf8")) {
    if (b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c) out += String.fromCharCode(b);
    else out += `\\x${b.toString(16).padStart(2, "0")}`;
  }
  return out + '"';
}

export interface WorkerdConfigInput {
  run: RunnableScript;
  /** The compatibility date it runs with (the script's, or the runtime's newest when the script asks for a later one). */
  compatibilityDate: string;
  /** Path of each module's file, relative to the config file (written beside it). */
  modulePath(index: number): string;
  /** Target of each r2_bucket / kv_namespace binding, by binding name. */
  bindingTarget(binding: StorageBinding): BindingTarget;
}

const secretVariable = (i: number) => `EDGE_WORKER_SECRET_${i}`;

/**
 * The whole environment of a workerd process running `secrets`: their values under the names the config's
 * fromEnvironment bindings read, and nothing of the platform's own environment (its keys and tokens).
 */
export function secretEnvironment(secrets: readonly { text: string }[]): Record<string, string> {
  return Object.fromEntries(secrets.map((s, i) => [secretVariable(i), s.text]));
}

/**
 * The config of one workerd process running one script: a socket "http" whose unix socket path is given on
 * the command line (each process gets a fresh one), storage bindings as external services on the binding
 * server, vars as text, secrets from the process environment (see `secretEnvironment`: they never touch
 * the disk in clear), and a global outbound that only reaches public addresses.
 */
export function workerdConfig(input: WorkerdConfigInput): string {
  const { script, modules, secrets } = input.run;
  const services: string[] = [`(name = "main", worker = .script)`, `(name = "internet", network = (allow = ["public"], deny = ["local", "private"]))`];
  const bindings: string[] = [];
  for (const b of script.bindings) {
    if (b.type === "plain_text") {
      bindings.push(`(name = ${capnpString(b.name)}, text = ${capnpString(b.text)})`);
      continue;
    }
    const target = input.bindingTarget(b);
    const service = `binding-${services.length}`;
    services.push(
      `(name = ${capnpString(service)}, external = (address = ${capnpString(target.address)}, http = (injectRequestHeaders = [(name = ${capnpString(target.header.name)}, value = ${capnpString(target.header.value)})])))`,
    );
    bindings.push(`(name = ${capnpString(b.name)}, ${b.type === "r2_bucket" ? "r2Bucket" : "kvNamespace"} = ${capnpString(service)})`);
  }
  secrets.forEach((s, i) => bindings.push(`(name = ${capnpString(s.name)}, fromEnvironment = ${capnpString(secretVariable(i))})`));
  // The main module first: workerd treats the first module as the entry point.
  const order = modules.map((_, i) => i).sort((a, b) => Number(modules[b].name === script.mainModule) - Number(modules[a].name === script.mainModule));
  const mods = order.map((i) => `(name = ${capnpString(modules[i].name)}, ${modules[i].kind} = embed ${capnpString(input.modulePath(i))})`);
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    ${services.join(",\n    ")}
  ],
  sockets = [(name = "http", http = (), service = "main")],
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
  globalOutbound = "internet",
);
`;
}
