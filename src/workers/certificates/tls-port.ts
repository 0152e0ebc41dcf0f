import { once } from "node:events";
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
  serve: (socket: TLSSocket) => void;
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
      handshakeTimeout: 10_000,
    },
    (socket) => opts.serve(socket),
  );
  // Handshakes without SNI, for a name without a certificate, or broken ones: the client's problem, at debug level.
  server.on("tlsClientError", (err, socket) => {
    opts.log.debug({ error: err.message }, "a TLS handshake on the HTTPS edge port failed");
    socket.destroy();
  });
  server.listen(opts.port, opts.host);
  await once(server, "listening");
  return server;
}
