import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../core/logger.js";
import { capnpString } from "./capnp-config.js";
import { WorkerdProcess } from "./workerd-process.js";

export interface BoundWorkerd {
  /** Where the script answers, e.g. http://127.0.0.1:PORT */
  url: string;
  stop(): Promise<void>;
}

/**
 * For tests of a binding backend against the real runtime: one workerd running `script` (an ES module) whose
 * binding `name` sends its calls to `handler` on a loopback server, as the platform's binding server would.
 */
export async function startBoundWorkerd(opts: {
  script: string;
  binding: { name: string; kind: "r2Bucket" | "kvNamespace" };
  compatibilityDate: string;
  handler: (req: IncomingMessage, res: ServerResponse) => void;
}): Promise<BoundWorkerd> {
  const dir = mkdtempSync(join(tmpdir(), "bound-workerd-"));
  const backend = createServer(opts.handler);
  await new Promise<void>((r) => backend.listen(0, "127.0.0.1", r));
  const port = (backend.address() as AddressInfo).port;
  writeFileSync(join(dir, "main.js"), opts.script);
  writeFileSync(
    join(dir, "config.capnp"),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "backend", external = (address = "127.0.0.1:${port}", http = ())),
  ],
  sockets = [(name = "http", address = "127.0.0.1:0", http = (), service = "main")],
);
const worker :Workerd.Worker = (
  modules = [(name = "main.js", esModule = embed "main.js")],
  compatibilityDate = ${capnpString(opts.compatibilityDate)},
  bindings = [(name = ${capnpString(opts.binding.name)}, ${opts.binding.kind} = "backend")],
);
`,
  );
  let workerd: WorkerdProcess;
  try {
    workerd = await WorkerdProcess.start(join(dir, "config.capnp"), createLogger({ level: "silent" }), { test: opts.binding.kind });
  } catch (err) {
    backend.close();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `http://127.0.0.1:${workerd.port}`,
    async stop() {
      await workerd.stop();
      await new Promise((r) => backend.close(r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
