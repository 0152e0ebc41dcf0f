import assert from "node:assert/strict";
import { test } from "node:test";
import { OriginPools } from "./pools.js";

test("OriginPools.pool: one pool per address, port, TLS name and mode, asked in any order", async () => {
  const pools = new OriginPools({ connectTimeoutMs: 1000, answerTimeoutMs: 1000 });
  try {
    const plain = pools.pool({ address: "192.0.2.1", servername: "a.example", mode: "off" });
    // Plain HTTP: the name is only the Host header, and `off` and `flexible` speak the same to port 80.
    assert.equal(pools.pool({ address: "192.0.2.1", servername: "b.example", mode: "flexible" }), plain);
    assert.notEqual(pools.pool({ address: "192.0.2.1", servername: "a.example", mode: "off", port: 8080 }), plain);
    assert.notEqual(pools.pool({ address: "192.0.2.2", servername: "a.example", mode: "off" }), plain);
    // TLS: the name is the SNI and the certificate checked, and `full` does not verify what `strict` does.
    const full = pools.pool({ address: "192.0.2.1", servername: "a.example", mode: "full" });
    assert.notEqual(full, plain);
    assert.notEqual(pools.pool({ address: "192.0.2.1", servername: "b.example", mode: "full" }), full);
    assert.notEqual(pools.pool({ address: "192.0.2.1", servername: "a.example", mode: "strict" }), full);
    assert.notEqual(pools.pool({ address: "192.0.2.1", servername: "a.example", mode: "full", port: 8443 }), full);
    // Asked again after others (the most recently used moves to the end): the same pools.
    assert.equal(pools.pool({ address: "192.0.2.1", servername: "a.example", mode: "full" }), full);
    assert.equal(pools.pool({ address: "192.0.2.1", servername: "c.example", mode: "off" }), plain);
    assert.equal(pools.pool({ address: "192.0.2.1", servername: "c.example", mode: "off" }), plain);
    assert.equal(pools.pool({ address: "192.0.2.1", servername: "a.example", mode: "full" }), full);
  } finally {
    await pools.close();
  }
});

test("OriginPools.pool: past 1,024 pools the least recently used one is closed, not one asked again meanwhile", async () => {
  const pools = new OriginPools({ connectTimeoutMs: 1000, answerTimeoutMs: 1000 });
  const target = (i: number) => ({ address: `198.18.${i >> 8}.${i & 255}`, servername: "a.example", mode: "off" as const });
  try {
    const first = pools.pool(target(0));
    const second = pools.pool(target(1));
    for (let i = 2; i < 1024; i++) pools.pool(target(i));
    assert.equal(pools.pool(target(0)), first, "asked again: now the most recently used");
    pools.pool(target(1024));
    assert.equal(pools.pool(target(0)), first);
    assert.notEqual(pools.pool(target(1)), second, "the least recently used was closed and is made anew");
  } finally {
    await pools.close();
  }
});

test("OriginPools.pool: the same target asked in a row is the same pool; after close() a new one, never the closed one", async () => {
  const pools = new OriginPools({ connectTimeoutMs: 1000, answerTimeoutMs: 1000 });
  const target = { address: "192.0.2.7", servername: "a.example", mode: "flexible" as const };
  const first = pools.pool(target);
  assert.equal(pools.pool(target), first);
  assert.equal(pools.pool({ ...target }), first, "equal fields, another object");
  await pools.close();
  const after = pools.pool(target);
  try {
    assert.notEqual(after, first);
    assert.equal(after.destroyed, false);
  } finally {
    await pools.close();
  }
});
