/**
 * A Node.js binary of a given major for tests (e.g. a client that needs a newer Node than the one running the
 * suite). The one implementation is scripts/lib/node-binary.mjs, shared with scripts/test-other-node.mjs; this is
 * its typed door from the compiled tests (dist/core/testing/ is three levels below the repository).
 */
export interface NodeBinary {
  /** The `node` executable. */
  path: string;
  version: string;
  /** The installation's prefix: bin/node and include/node (headers for native addons). */
  prefix: string;
}

interface NodeBinaryModule {
  nodeBinary(major: number, opts?: { cacheDir?: string; log?: (line: string) => void }): NodeBinary;
  defaultNodeCacheDir(env?: NodeJS.ProcessEnv): string;
}

const helper = new URL("../../../scripts/lib/node-binary.mjs", import.meta.url).href;

/** This process's Node when it is `major`, else one from the cache, fetched once from the npm registry. */
export async function nodeBinary(major: number, opts?: { cacheDir?: string; log?: (line: string) => void }): Promise<NodeBinary> {
  const mod = (await import(helper)) as NodeBinaryModule;
  return mod.nodeBinary(major, opts);
}
