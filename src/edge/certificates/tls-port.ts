import { once } from "node:events";
import type { Socket } from "node:net";
import { createServer, type SecureContext, type Server, type TLSSocket } from "node:tls";
import type { Logger } from "../../core/logger.js";

/**
 * The HTTPS port of the edge: TLS with the certificate SNI names (no certificate, no handshake), then each decrypted
 * connection is handed on by the protocol ALPN chose: `h2` to `serveHttp2` (http2.ts), anything else to the edge
 * port's HTTP server (`serve`), so HTTPS requests are routed exactly as plain ones are, by the same code.
 */
export async function listenTls(opts: {
  host: string;
  port: number;
  contextFor: (servername: string) => SecureContext | undefined;
  /** Counts a connection from accept under the edge port's limits; false when over one (it has been closed). */
  admit: (socket: Socket) => boolean;
  serve: (socket: TLSSocket) => void;
  serveHttp2: (socket: TLSSocket) => void;
  /** Whether `h2` is offered to a connection for this SNI name (the zone's `http2` setting). */
  http2For: (servername: string) => boolean;
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
      // By name: HTTP/2 and HTTP/1.1, or HTTP/1.1 only where the zone turned `http2` off. A client that offers
      // neither (none offers nothing else in practice) gets no protocol and the handshake fails.
      ALPNCallback: ({ servername, protocols }) => {
        if (protocols.includes("h2") && opts.http2For(servername ?? "")) return "h2";
        return protocols.includes("http/1.1") ? "http/1.1" : undefined;
      },
      // A ClientHello must arrive and the handshake finish within this (Node's default is 120 s).
      handshakeTimeout: opts.handshakeTimeoutMs,
    },
    (socket) => (socket.alpnProtocol === "h2" ? opts.serveHttp2(socket) : opts.serve(socket)),
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
