import { once } from "node:events";
import type { Socket } from "node:net";
import { createServer, type SecureContext, type Server, type TLSSocket } from "node:tls";
import type { Logger } from "../../core/logger.js";

/**
 * The HTTPS port of the edge: TLS with the certificate SNI names (a Custom Domain's; no certificate, no handshake),
 * then each decrypted connection is handed to the edge port's HTTP server (`serve`), so HTTPS requests are routed
 * to Workers exactly as plain ones are, by the same code.
 */
export async function listenTls(opts: {
  host: string;
  port: number;
  contextFor: (servername: string) => SecureContext | undefined;
  /** Counts a connection from accept under the edge port's limits; false when over one (it has been closed). */
  admit: (socket: Socket) => boolean;
  serve: (socket: TLSSocket) => void;
  /** How long a ClientHello may take to arrive and the handshake to finish (ms). */
  handshakeTimeoutMs: number;
  log: Logger;
}): Promise<Server> {
  const server = createServer(
    {
      SNICallback: (servername, done) => {
        const context = opts.contextFor(servername);
        if (context) done(null, context);
        else done(new Error(`no certificate for ${servername}`));
      },
      // HTTP/1.1 only: the edge's HTTP server is an HTTP/1 server.
      ALPNProtocols: ["http/1.1"],
      // A ClientHello must arrive and the handshake finish within this (Node's default is 120 s).
      handshakeTimeout: opts.handshakeTimeoutMs,
    },
    (socket) => opts.serve(socket),
  );
  // Counted from accept, before the handshake: Node's TLS server makes its TLS socket in its one `connection`
  // listener, which only sees connections within the limits. A silent connection holds a descriptor as much as a
  // served one; the TLS socket closes its TCP socket, which is when the count goes down.
  const [tlsConnection, ...others] = server.listeners("connection") as ((socket: Socket) => void)[];
  if (!tlsConnection || others.length > 0) throw new Error("expected Node's one connection listener on a new TLS server");
  server.removeListener("connection", tlsConnection);
  server.on("connection", (socket: Socket) => {
    if (opts.admit(socket)) tlsConnection.call(server, socket);
  });
  // Handshakes without SNI, for a name without a certificate, or broken ones: the client's problem, at debug level.
  server.on("tlsClientError", (err, socket) => {
    opts.log.debug({ error: err.message }, "a TLS handshake on the HTTPS edge port failed");
    socket.destroy();
  });
  server.listen(opts.port, opts.host);
  await once(server, "listening");
  return server;
}
