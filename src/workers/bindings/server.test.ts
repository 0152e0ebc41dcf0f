import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createLogger } from "../../core/logger.js";
import type { BindingBackendName } from "./binding-type.js";
import { BINDING_HEADER, BindingServer, type BindingCall, type BindingHandler } from "./server.js";

/** Sends `head` (a request head) on a fresh connection to the unix socket at `address` and answers the response's first line. */
function exchange(address: string, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(address.slice("unix:".length));
    let got = "";
    socket.on("data", (chunk) => {
      got += chunk.toString("latin1");
      const end = got.indexOf("\r\n");
      if (end >= 0) {
        socket.destroy();
        resolve(got.slice(0, end));
      }
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(got.split("\r\n")[0]));
    socket.write(head);
  });
}

describe("binding server: scripts' connect() sockets are labelled by their account's socket, never by what they send", () => {
  const dir = mkdtempSync(join(tmpdir(), "binding-server-test-"));
  const server = new BindingServer(
    new Map<BindingBackendName, BindingHandler>([["outbound", (call, _req, res) => void res.end(`fetch of ${call.accountId}`)]]),
    createLogger({ level: "silent" }),
  );
  const tunnels: { target: string; accountId: string }[] = [];
  const outboundA: BindingCall = { backend: "outbound", accountId: "account-a", resource: "script-a" };
  const outboundB: BindingCall = { backend: "outbound", accountId: "account-b", resource: "script-b" };

  before(async () => {
    await server.start(join(dir, "bindings.sock"));
    server.takeAccountTunnels((target, socket, _head, accountId) => {
      tunnels.push({ target, accountId });
      socket.end("HTTP/1.1 200 Connection Established\r\n\r\n");
    });
  });
  after(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("each account's global outbound has its own socket; its other bindings stay on the shared one", () => {
    const a = server.target(outboundA);
    const b = server.target(outboundB);
    assert.notEqual(a.address, b.address);
    assert.notEqual(a.address, server.listenAddress);
    assert.equal(server.target({ ...outboundA, resource: "other-script" }).address, a.address, "one socket per account, not per script");
    assert.equal(server.target({ backend: "kv", accountId: "account-a", resource: "ns" }).address, server.listenAddress);
  });

  it("a CONNECT on account A's socket is A's, whatever binding header it carries; one on the shared socket is refused", async () => {
    const a = server.target(outboundA);
    const b = server.target(outboundB);
    // A CONNECT claiming B's identity (B's own valid header) on A's socket is still A's: the socket is the label.
    const forged = `CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n${BINDING_HEADER}: ${b.header.value}\r\n\r\n`;
    assert.equal(await exchange(a.address, forged), "HTTP/1.1 200 Connection Established");
    assert.equal(await exchange(b.address, "CONNECT example.org:80 HTTP/1.1\r\nhost: example.org:80\r\n\r\n"), "HTTP/1.1 200 Connection Established");
    assert.deepEqual(tunnels, [
      { target: "example.com:443", accountId: "account-a" },
      { target: "example.org:80", accountId: "account-b" },
    ]);
    // Unlabelled: on the shared socket a CONNECT naming no binding is refused, even with a valid header.
    assert.equal(await exchange(server.listenAddress, forged), "HTTP/1.1 403 Forbidden");
    assert.equal(tunnels.length, 2);
  });

  it("a request on account A's socket is served only with a header of A's; another account's header gets 403", async () => {
    const a = server.target(outboundA);
    const b = server.target(outboundB);
    const get = (header: string) => `GET http://example.com/ HTTP/1.1\r\n${BINDING_HEADER}: ${header}\r\nconnection: close\r\n\r\n`;
    assert.equal(await exchange(a.address, get(a.header.value)), "HTTP/1.1 200 OK");
    assert.equal(await exchange(a.address, get(b.header.value)), "HTTP/1.1 403 Forbidden");
    assert.equal(await exchange(server.listenAddress, get(b.header.value)), "HTTP/1.1 200 OK");
  });
});
