import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { serveUpgradeAsRequest } from "../../core/http/upgrade.js";
import { dropBindingHeader, type BindingCall } from "../bindings/server.js";
import { CF_BLOB_HEADER } from "./capnp-config.js";

/** Who sends a Worker's subrequest: its account, and whether a zone is one of its own (the zones it is routed in). */
export interface SubrequestSender {
  accountId: string;
  script: string;
  ownZone(zoneId: string): boolean;
  /** The subrequest's `cf` object as JSON (workerd's cfBlobHeader), if the script set one. */
  cf?: string;
}

/**
 * Where Workers' subrequests go (the edge's forwarder, edge/origin, attached by platform.ts): a request with an
 * absolute URL, as workerd's global outbound sends it.
 */
export interface SubrequestPort {
  fetch(req: IncomingMessage, res: ServerResponse, from: SubrequestSender): void;
  /**
   * A WebSocket handshake a script's fetch() sent (Upgrade: websocket; `socket` is workerd's connection): true when
   * taken (to an origin of its own zone whose `websockets` setting is on), false to have it served as a plain fetch.
   */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, from: SubrequestSender): boolean;
  /**
   * A socket a script of `from.accountId` opens (connect()) to `target` (host:port): public addresses only, its name
   * looked up under that account's allowance.
   */
  connect(target: string, socket: Duplex, head: Buffer, from: { accountId: string }): void;
  /** A Cache API call of the script (workerd's cacheApiOutbound): the edge's cache answers it for `from`'s zones. */
  cache(req: IncomingMessage, res: ServerResponse, from: SubrequestSender): void;
}

/**
 * Every script's global outbound (its fetch() to anywhere but its bindings): workerd sends it to the binding server
 * (capnp-config.ts, backend `outbound`, resource the script's name), which hands it here. The edge's forwarder then
 * takes a URL on a proxied name of the script's own zones to that name's origin, and sends anything else out as
 * workerd's own network access did (public addresses only).
 */
export class WorkerOutbound {
  private port?: SubrequestPort;
  /** Told of every subrequest (workersInvocationsAdaptive's `subrequests`), once attached. */
  private subrequests?: (sender: { accountId: string; script: string }) => void;

  constructor(
    /** The zones where a script has a route or Custom Domain (RouteTable.zonesOf). */
    private readonly zonesOf: (script: string) => ReadonlySet<string>,
    /** Counts a script's subrequest (workers/metrics.ts). */
    private readonly counted: (script: string) => void = () => {},
  ) {}

  attach(port: SubrequestPort): void {
    this.port = port;
  }

  onSubrequest(listener: (sender: { accountId: string; script: string }) => void): void {
    this.subrequests = listener;
  }

  readonly handle = (call: BindingCall, req: IncomingMessage, res: ServerResponse): void => {
    // The binding server's credential is never passed on (to an origin or anywhere), nor the cf blob (read here).
    dropBindingHeader(req);
    const cf = takeHeader(req, CF_BLOB_HEADER);
    this.subrequests?.({ accountId: call.accountId, script: call.resource });
    if (!this.port) {
      req.resume();
      res.destroy();
      return;
    }
    this.counted(call.resource);
    this.port.fetch(req, res, { ...this.sender(call), cf });
  };

  /**
   * The script's Cache API calls (workerd's cacheApiOutbound, capnp-config.ts): the binding server's label names the
   * script, and only that identity (its account, the zones it is routed in) decides which zone's cache answers.
   */
  readonly cacheHandle = (call: BindingCall, req: IncomingMessage, res: ServerResponse): void => {
    dropBindingHeader(req);
    if (!this.port) {
      req.resume();
      res.writeHead(503).end();
      return;
    }
    this.port.cache(req, res, this.sender(call));
  };

  /** A script's fetch() with Upgrade: websocket (workerd sends it as a handshake, and expects 101). */
  readonly upgrade = (call: BindingCall, req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    dropBindingHeader(req);
    if (!this.port) return void socket.destroy();
    const port = this.port;
    const from = this.sender(call);
    if (!port.upgrade(req, socket, head, from)) serveUpgradeAsRequest(req, socket, (r, res) => port.fetch(r, res, from));
  };

  private sender(call: BindingCall): SubrequestSender {
    return { accountId: call.accountId, script: call.resource, ownZone: (zoneId) => this.zonesOf(call.resource).has(zoneId) };
  }

  /**
   * A script's socket (connect()): workerd's CONNECT carries no header naming its script, so the binding server
   * labels it with the account whose socket it came in on (bindings/server.ts).
   */
  readonly tunnel = (target: string, socket: Duplex, head: Buffer, accountId: string): void => {
    if (!this.port) return void socket.destroy();
    this.port.connect(target, socket, head, { accountId });
  };
}

/** Removes a header from a request passed on, answering its (first) value. */
function takeHeader(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  if (value === undefined) return undefined;
  delete req.headers[name];
  const raw = req.rawHeaders;
  for (let i = raw.length - 2; i >= 0; i -= 2) if (raw[i].toLowerCase() === name) raw.splice(i, 2);
  return Array.isArray(value) ? value[0] : value;
}
