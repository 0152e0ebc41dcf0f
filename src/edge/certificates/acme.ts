import { X509Certificate } from "node:crypto";
import { Agent } from "node:https";
import { rootCertificates } from "node:tls";
import type * as AcmeClient from "acme-client";
import type { EdgeTlsConfig } from "./config.js";

/** What an order needs done in DNS: the TXT record at `name` made before the CA looks, and removed after. */
export interface Dns01Answerer {
  create(name: string, value: string): Promise<void>;
  remove(name: string, value: string): Promise<void>;
}

export interface IssuedCertificate {
  /** The chain as the CA sent it, leaf first. */
  certPem: string;
  keyPem: string;
  notAfter: number;
}

type Acme = typeof AcmeClient;

/**
 * acme-client, loaded on the first order rather than at start: with axios under it, it is ~5 MiB of heap and 6-12
 * MiB of resident memory (docs/benchmarks.md) that a platform ordering no certificate (no --edge-tls-port, or
 * nothing to order yet) never needs.
 */
let acmeModule: Promise<Acme> | undefined;
const loadAcme = (): Promise<Acme> => (acmeModule ??= import("acme-client"));

/** acme-client retries no failed request from now on (it reads this setting when a request fails). */
const stopRetries = (acme: Acme) => {
  (acme.axios.defaults as { acmeSettings?: { retryMaxAttempts: number } }).acmeSettings!.retryMaxAttempts = 0;
};

/** How long one request to the ACME server may take (acme-client's HTTP client has no limit of its own). */
const ACME_REQUEST_TIMEOUT_MS = 30_000;

/**
 * Orders certificates from the ACME CA with acme-client (RFC 8555): the platform's ACME account key is made once
 * and kept (sealed) by the caller; each order gets a new P-256 key. Everything here is network I/O or Node's
 * asynchronous key generation: nothing waits on the event loop.
 */
export class AcmeOrderer {
  private client: AcmeClient.Client | undefined;
  /** acme-client, set up for this platform (loaded on first use, see loadAcme); `ready` once it is. */
  private acme?: Promise<Acme>;
  private ready?: Acme;
  /** Aborts every request to the CA at once when the platform stops: a CA that never answers holds nothing up. */
  private readonly aborted = new AbortController();
  /** Calls into our own stores (the account key, challenge records) under way: `close` waits for them. */
  private readonly storeCalls = new Set<Promise<unknown>>();
  /** Rejects once closed: an order under way is given up then. */
  private readonly closed: Promise<never>;

  constructor(
    private readonly cfg: EdgeTlsConfig["acme"],
    /** The platform's ACME account key (PEM), made on first use and the same on every node. */
    private readonly accountKey: (make: () => Promise<string>) => Promise<string>,
  ) {
    this.closed = new Promise<never>((_resolve, reject) =>
      this.aborted.signal.addEventListener("abort", () => reject(new Error("the platform is stopping")), { once: true }),
    );
    this.closed.catch(() => undefined);
  }

  /** acme-client, its HTTP client set up for this platform on first use. */
  private loaded(): Promise<Acme> {
    return (this.acme ??= loadAcme().then((acme) => {
      // acme-client speaks through one axios instance of its own: the CA file is trusted there, besides Node's roots.
      // One platform runs per process, so setting it on that instance is setting it for the platform.
      acme.axios.defaults.timeout = ACME_REQUEST_TIMEOUT_MS;
      acme.axios.defaults.signal = this.aborted.signal;
      // Once closed, no request starts (a retry acme-client had scheduled included). The error has no request config,
      // which acme-client's retry interceptor takes as not retryable.
      acme.axios.interceptors.request.use((config) => {
        if (this.aborted.signal.aborted) throw new Error("the platform is stopping");
        return config;
      });
      if (this.cfg.ca) acme.axios.defaults.httpsAgent = new Agent({ ca: [...rootCertificates, this.cfg.ca] });
      this.ready = acme;
      if (this.aborted.signal.aborted) stopRetries(acme);
      return acme;
    }));
  }

  private async acmeClient(): Promise<AcmeClient.Client> {
    if (!this.client) {
      const acme = await this.loaded();
      const key = await this.storeCall(() => this.accountKey(async () => (await acme.crypto.createPrivateEcdsaKey("P-256")).toString()));
      // Polls for the CA's verdict from 1 s on, doubling up to 10 s: pebble and real CAs answer within seconds.
      const client = new acme.Client({ directoryUrl: this.cfg.directoryUrl, accountKey: key, backoffMin: 1000, backoffMax: 10_000 });
      await this.register(client);
      this.client = client;
    }
    return this.client;
  }

  /**
   * Finds the platform's ACME account, or makes it. The key is shared by every node and kept across restarts, so the
   * account usually exists already: it is looked up (`onlyReturnExisting`, RFC 8555 section 7.3.1) rather than
   * registered again, since acme-client answers an existing account by sending the registration as an update, which
   * a CA may refuse as an update that changes nothing (pebble does: every node but the first, and every restart,
   * then failed its first order).
   */
  private async register(client: AcmeClient.Client): Promise<void> {
    try {
      await client.createAccount({ onlyReturnExisting: true });
      return;
    } catch {
      // No such account (or the lookup failed): registering says which.
    }
    await client.createAccount({ termsOfServiceAgreed: true, ...(this.cfg.email && { contact: [`mailto:${this.cfg.email}`] }) });
  }

  /**
   * Orders a certificate for `hostname`; `*.zone` orders one for the zone's apex and its wildcard (a zone's edge
   * certificate), both answered at `_acme-challenge.<zone>` (RFC 8555 section 8.4: a wildcard's challenge is at its base).
   */
  async order(hostname: string, dns: Dns01Answerer): Promise<IssuedCertificate> {
    const client = await this.acmeClient();
    const acme = await this.loaded();
    const names = hostname.startsWith("*.") ? [hostname.slice(2), hostname] : [hostname];
    const [key, csr] = await acme.crypto.createCsr({ commonName: names[0], altNames: names }, await acme.crypto.createPrivateEcdsaKey("P-256"));
    const ordered = client.auto({
      csr,
      email: this.cfg.email,
      termsOfServiceAgreed: true,
      challengePriority: ["dns-01"],
      // acme-client would look the TXT record up through the system's resolver; the record is in our own DNS, and
      // the CA's check is the one that counts.
      skipChallengeVerification: true,
      challengeCreateFn: async (authz, challenge, keyAuthorization) => {
        if (challenge.type !== "dns-01") throw new Error(`the CA offered ${challenge.type}, not dns-01`);
        await this.storeCall(() => dns.create(`_acme-challenge.${authz.identifier.value}`, keyAuthorization));
      },
      challengeRemoveFn: (authz, _challenge, keyAuthorization) =>
        this.storeCall(() => dns.remove(`_acme-challenge.${authz.identifier.value}`, keyAuthorization)),
    });
    // acme-client retries a failed request after a backoff of up to 10 s, aborted or not: the order is given up at
    // once instead (what it still runs fails at its next request, and touches no store, see storeCall).
    ordered.catch(() => undefined);
    const certPem = await Promise.race([ordered, this.closed]);
    const leaf = new X509Certificate(certPem);
    return { certPem, keyPem: key.toString(), notAfter: Date.parse(leaf.validTo) };
  }

  /**
   * Stops ordering (the platform stops): requests to the CA under way are aborted, an order under way rejects, and
   * this resolves once no call into our stores is under way, so the stores can be closed after it.
   */
  async close(): Promise<void> {
    // acme-client retries a failed request (an aborted one too) after 5, 10, … 25 s: 75 s of waiting, which is what
    // SIGTERM took. It reads this setting when a request fails: none is retried from now on (set as it loads, when
    // it is loading now).
    if (this.ready) stopRetries(this.ready);
    this.aborted.abort(new Error("the platform is stopping"));
    await Promise.allSettled([...this.storeCalls]);
  }

  /** Runs a call into our stores unless closed, and keeps it known until it settles. */
  private storeCall<T>(call: () => Promise<T>): Promise<T> {
    if (this.aborted.signal.aborted) return Promise.reject(new Error("the platform is stopping"));
    const p = call();
    this.storeCalls.add(p);
    void p.then(
      () => this.storeCalls.delete(p),
      () => this.storeCalls.delete(p),
    );
    return p;
  }
}
