import assert from "node:assert/strict";
import { test } from "node:test";
import { readQueuesConfig, serveOptions } from "./config.js";
import type { OptionValues } from "../core/cli/command.js";

const options = (backlog: number) =>
  ({
    "queue-consumer-timeout": 900,
    "queue-poll-interval": 1,
    "queue-backlog-max-bytes": backlog,
    "queue-retention-sweep-interval": 30,
    given: new Set(),
  }) as unknown as OptionValues<typeof serveOptions>;

test("--queue-backlog-max-bytes: 25 GB by default, a whole number of bytes or a clear refusal at start", () => {
  assert.equal(serveOptions["queue-backlog-max-bytes"].default, 25_000_000_000);
  assert.equal(readQueuesConfig(options(25_000_000_000)).backlogMaxBytes, 25_000_000_000);
  assert.equal(readQueuesConfig(options(100)).backlogMaxBytes, 100);
  for (const bad of [Number.NaN, 0, -5, 1.5, Number.POSITIVE_INFINITY])
    assert.throws(() => readQueuesConfig(options(bad)), /--queue-backlog-max-bytes must be a whole number of bytes/, String(bad));
});
