import { ServerResponse, type IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { CoreErrors } from "../errors.js";
import { refuseOnSocket } from "./transport-errors.js";

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Serves a request that asked to upgrade its connection (`Upgrade: h2c`, a WebSocket to the API…) and that no
 * service took, as the ordinary request it also is: Node hands every such request to the `upgrade` listener once
 * one exists, so without this they would go unanswered. The answer ignores the upgrade and closes the connection.
 * Node reads no body for them, so one that has a body is refused.
 */
export function serveUpgradeAsRequest(req: IncomingMessage, socket: Duplex, listener: RequestListener): void {
  if (req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0) {
    refuseOnSocket(socket, CoreErrors.badRequest("A request that asks to upgrade its connection cannot have a body here"));
    return;
  }
  socket.on("error", () => socket.destroy());
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket as Socket);
  res.once("finish", () => {
    res.detachSocket(socket as Socket);
    socket.end();
  });
  // The request has no body: its stream ends now, so a route that reads it does not wait.
  if (!req.complete) req.push(null);
  listener(req, res);
}
