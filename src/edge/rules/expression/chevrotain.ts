import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);

/**
 * chevrotain from the single-file build its package ships (lib/chevrotain.mjs), not from its package entry: the entry
 * is an ES module graph of some hundred files over lodash-es, which took 1.9–3.1 s to load and 5.4 MiB of heap on a
 * loaded machine, the single file 0.1 s and 0.9 MiB (docs/benchmarks.md, "Resident memory at idle"). The package's
 * `exports` name only its entry, so the file is found beside it. Every runtime use of chevrotain goes through here:
 * token types and parsers of two copies would not recognise each other.
 */
export const chevrotain = require(join(dirname(require.resolve("chevrotain")), "..", "chevrotain.mjs")) as typeof import("chevrotain");
