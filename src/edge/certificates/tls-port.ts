import { once } from "node:events";
import { createServer as createNetServer, type Server, type Socket } from "node:net";
import { createServer, DEFAULT_CIPHERS, type SecureContext, type SecureVersion, type Server as TlsServer, type TLSSocket } from "node:tls";
import type { Logger } from "../../core/logger.js";
import { peekClientHello } from "./client-hello.js";

/** The TLS versions a name's connections may use (its zone's `min_tls_version` and `tls_1_3`). */
export interface TlsBounds {
  min: SecureVersion;
  max: SecureVersion;
}

/**
 * The HTTPS port of the edge: TLS with the certificate SNI names (no certificate, no handshake), then each decrypted
 * connection is handed on by the protocol ALPN chose: `h2` to `serveHttp2` (http2.ts), anything else to the edge
 * port's HTTP server (`serve`), so HTTPS requests are routed exactly as plain ones are, by the same code.
 *
 * The versions a connection may use are its name's (`versionsFor`): OpenSSL settles the version before Node's SNI
 * callback runs, and a connection's bounds cannot change after it is made, so the port reads each ClientHello's
 * name first (client-hello.ts) and hands the connection to one of several TLS servers, one per pair of bounds
 * (made when first needed; none of them listens). A handshake whose SNI then differs from the peeked one is cut.
 */
export async function listenTls(opts: {
  host: string;
  port: number;
  contextFor: (servername: string) => SecureContext | undefined;
  /** The TLS versions for this SNI name (for a hello without one: the defaults). */
  versionsFor: (servername: string | undefined) => TlsBounds;
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
  const servers = new Map<string, { server: TlsServer; accept: (socket: Socket) => void }>();
  const peeked = new WeakMap<Socket, string | undefined>();
  const tlsServer = (bounds: TlsBounds) => {
    const key = `${bounds.min}-${bounds.max}`;
    let made = servers.get(key);
    if (made) return made;
    const server = createServer(
      {
        minVersion: bounds.min,
        maxVersion: bounds.max,
        // TLS 1.0 and 1.1 sign with SHA-1, which OpenSSL 3's default security level refuses ("no suitable signature
        // algorithm"): where a zone accepts them the level is 0; the cipher list stays Node's.
        ...(bounds.min === "TLSv1" || bounds.min === "TLSv1.1" ? { ciphers: `${DEFAULT_CIPHERS}:@SECLEVEL=0` } : {}),
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
      (socket) => {
        // The name the bounds were chosen for must be the one the handshake used (a hello read otherwise is refused).
        // (Node keeps the TCP socket a TLS socket wraps as its `_parent`.)
        const expected = peeked.get((socket as unknown as { _parent: Socket })._parent);
        if ((socket.servername || undefined)?.toLowerCase() !== expected) {
          opts.log.debug({ servername: socket.servername, expected }, "a TLS connection's SNI was not the one its ClientHello was read with");
          return void socket.destroy();
        }
        if (socket.alpnProtocol === "h2") opts.serveHttp2(socket);
        else opts.serve(socket);
      },
    );
    // Node's TLS server makes its TLS socket in its one `connection` listener: called here for the sockets it is given.
    const [tlsConnection, ...others] = server.listeners("connection") as ((socket: Socket) => void)[];
    if (!tlsConnection || others.length > 0) throw new Error("expected Node's one connection listener on a new TLS server");
    // Handshakes without SNI, for a name without a certificate, below the name's minimum version, or broken ones: the
    // client's problem, at debug level.
    server.on("tlsClientError", (err, socket) => {
      opts.log.debug({ error: err.message }, "a TLS handshake on the HTTPS edge port failed");
      socket.destroy();
    });
    made = { server, accept: (socket) => tlsConnection.call(server, socket) };
    servers.set(key, made);
    return made;
  };
  // Counted from accept, before the handshake: a silent connection holds a descriptor as much as a served one; the
  // TLS socket closes its TCP socket, which is when the count goes down.
  const listener = createNetServer({ pauseOnConnect: false }, (socket) => {
    if (!opts.admit(socket)) return;
    peekClientHello(socket, opts.handshakeTimeoutMs, ({ servername }) => {
      if (socket.destroyed) return;
      peeked.set(socket, servername);
      tlsServer(opts.versionsFor(servername)).accept(socket);
    });
  });
  listener.listen(opts.port, opts.host);
  await once(listener, "listening");
  return listener;
}
