import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, fetch as undiciFetch, type RequestInit, type Response } from "undici";
import { createLogger } from "../../core/logger.js";
import type { Binding } from "../bindings/registry.js";
import { workerdConfig } from "../runtime/capnp-config.js";
import { entryModule } from "../runtime/entry-module.js";
import type { RunnableScript } from "../runtime/runtime.js";
import { defaultWorkerdPath } from "../runtime/workerd-binary.js";
import { WorkerdProcess } from "../runtime/workerd-process.js";

export interface BoundWorkerd {
  /** Sends a request to the script (workerd listens on a unix socket, as the platform runs it). */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  stop(): Promise<void>;
}

/**
 * For tests of a binding backend against the real runtime: one workerd running `script` (an ES module) whose
 * binding `name` sends its calls to `handler` on a unix socket server, as the platform's binding server would.
 */
export async function startBoundWorkerd(opts: {
  script: string;
  binding: { name: string; kind: "r2Bucket" | "kvNamespace" };
  compatibilityDate: string;
  handler: (req: IncomingMessage, res: ServerResponse) => void;
}): Promise<BoundWorkerd> {
  const dir = mkdtempSync(join(tmpdir(), "bound-workerd-"));
  const backend = createServer(opts.handler);
  const backendSocket = join(dir, "backend.sock");
  await new Promise<void>((r) => backend.listen(backendSocket, r));
  // The platform's own config generator, so these tests run the config the platform runs.
  const now = new Date().toISOString();
  const binding: Binding =
    opts.binding.kind === "r2Bucket"
      ? { type: "r2_bucket", name: opts.binding.name, bucket_name: "bound" }
      : { type: "kv_namespace", name: opts.binding.name, namespace_id: "bound" };
  const run: RunnableScript = {
    script: {
      accountId: "bound",
      name: "bound",
      versionId: "bound",
      etag: "",
      mainModule: "main.js",
      compatibilityDate: opts.compatibilityDate,
      compatibilityFlags: [],
      bindings: [binding],
      modules: [],
      createdOn: now,
      modifiedOn: now,
    },
    modules: [{ name: "main.js", kind: "esModule", content: Buffer.from(opts.script) }],
    secrets: [],
  };
  writeFileSync(join(dir, "main.js"), opts.script);
  const entry = entryModule("main.js");
  writeFileSync(join(dir, "entry.js"), entry.source);
  const config = workerdConfig({
    run,
    compatibilityDate: opts.compatibilityDate,
    modulePath: () => "main.js",
    entry: { module: entry, path: "entry.js" },
    bindingTarget: () => ({ address: `unix:${backendSocket}`, header: { name: "x-bound-workerd", value: "test" } }),
  });
  writeFileSync(join(dir, "config.capnp"), config);
  let workerd: WorkerdProcess;
  try {
    workerd = await WorkerdProcess.start({
      binary: defaultWorkerdPath(),
      configFile: join(dir, "config.capnp"),
      env: {},
      sockets: {
        http: join(dir, "workerd.sock"),
        handlers: join(dir, "handlers.sock"),
        scheduled: join(dir, "scheduled.sock"),
        rpc: join(dir, "rpc.sock"),
      },
      log: createLogger({ level: "silent" }),
      tag: { test: opts.binding.kind },
    });
  } catch (err) {
    backend.close();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const agent = new Agent({ connect: { socketPath: workerd.socketPath } });
  return {
    fetch: (path, init) => undiciFetch(`http://bound.workers.localhost${path}`, { ...init, dispatcher: agent }),
    async stop() {
      await agent.close();
      await workerd.stop();
      await new Promise((r) => backend.close(r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
