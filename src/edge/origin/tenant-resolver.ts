import { getServers, Resolver } from "node:dns/promises";

/** Lookups one account may have in flight at once; more wait in its queue. */
export const LOOKUPS_PER_ACCOUNT = 8;
/** Lookups one account may have waiting; beyond, a lookup finds no address at once. */
export const QUEUED_PER_ACCOUNT = 32;
/** Attempts per query (c-ares `tries`), each server in turn. */
const TRIES = 2;
/** Answers are kept for their records' TTL, at most this long (seconds). */
const MAX_KEPT_SECONDS = 300;
/** Names whose answers are kept at once; the oldest goes first beyond it. */
export const MAX_KEPT_NAMES = 10_000;
/**
 * Names one account's lookups may have kept at once; its own oldest goes first beyond it. Without it one account's
 * 10,000 names (a wildcard of its own) pushed every other account's answers out, each of its requests then waiting
 * for a query again.
 */
export const KEPT_NAMES_PER_ACCOUNT = 1_000;
/**
 * Addresses of one name used and kept (IPv4 first). A name server may answer hundreds (256 A records kept 10 MiB of
 * heap a thousand names, so one account's names alone 100 MiB); the forwarder tries at most 3 of them a request.
 */
export const ADDRESSES_PER_NAME = 16;

interface AccountLookups {
  running: number;
  /** Each waiter is handed a running slot (the count stays) when one ends. */
  waiting: (() => void)[];
}

/**
 * Tenants' outside names (a proxied CNAME's target outside our zones, a Worker's fetch() or connect() host), resolved
 * with c-ares on its own sockets, not with getaddrinfo on libuv's thread pool: there at most 2 lookups run at once
 * for the whole process, so one tenant's names whose name servers never answer would queue every other tenant's behind
 * them. Each account has at most LOOKUPS_PER_ACCOUNT in flight and QUEUED_PER_ACCOUNT waiting, so no account holds the
 * resolver for the others either. /etc/hosts is not read: it names the operator's hosts, not a tenant's.
 */
export class TenantResolver {
  private readonly resolver: Resolver;
  private readonly accounts = new Map<string, AccountLookups>();
  /**
   * Answers by name, kept for their TTL: without them every request to a proxied CNAME's outside target waited for
   * two queries. Public answers, the same whoever asks, so shared by all accounts; a kept one uses no lookup slot.
   */
  private readonly kept = new Map<string, { addresses: string[]; until: number; account: string }>();
  /** The names each account's lookups have kept, oldest first (KEPT_NAMES_PER_ACCOUNT). */
  private readonly keptBy = new Map<string, Set<string>>();

  constructor(
    /** The name servers (ip, ip:port, [ipv6]:port); the system's (/etc/resolv.conf) when empty. */
    servers: readonly string[],
    /** A lookup, with its wait in the queue, ends within this (the origin connect timeout). */
    private readonly deadlineMs: number,
  ) {
    // c-ares asks each server in turn and doubles the timeout on the second round: t + 2t per server, so the query has
    // ended (its slot free) within the deadline, when the caller gives up on it.
    const count = servers.length > 0 ? servers.length : Math.max(1, getServers().length);
    const timeout = Math.max(50, Math.min(5000, Math.floor(deadlineMs / (4 * count))));
    this.resolver = new Resolver({ timeout, tries: TRIES });
    if (servers.length > 0) this.resolver.setServers([...servers]);
  }

  /**
   * The IPv4 then IPv6 addresses `name` resolves to, for `account` (the key its lookups are counted under); none when
   * it does not resolve, the account's queue is full, or the deadline passes first.
   */
  async addresses(account: string, asked: string): Promise<string[]> {
    // One name, one kept answer and one lookup, however it is written: DNS names are case-insensitive, and a final dot
    // only says the name is absolute (which a lookup's name here always is). Without this, `A.example`, `a.example`
    // and `a.example.` were three entries and three lookups of the account's allowance. Not normalizeHostname: that
    // one reads Host headers (ports, brackets) through a memo every request shares, which tenants' names would churn.
    const name = (asked.endsWith(".") ? asked.slice(0, -1) : asked).toLowerCase();
    const kept = this.kept.get(name);
    if (kept && kept.until > Date.now()) return kept.addresses;
    let timer: NodeJS.Timeout | undefined;
    const deadline = Date.now() + this.deadlineMs;
    const lookup = this.lookup(account, name, deadline);
    const late = new Promise<string[]>((resolve) => (timer = setTimeout(() => resolve([]), this.deadlineMs).unref()));
    try {
      return await Promise.race([lookup, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Accounts with lookups in flight or waiting (for tests and metrics: it empties when they end). */
  get busyAccounts(): number {
    return this.accounts.size;
  }

  private async lookup(account: string, name: string, deadline: number): Promise<string[]> {
    const release = await this.slot(account);
    if (!release) return [];
    try {
      // A lookup that waited past its deadline is not sent: its caller has given up on it.
      if (Date.now() >= deadline) return [];
      const none = (): { address: string; ttl: number }[] => [];
      const [v4, v6] = await Promise.all([this.resolver.resolve4(name, { ttl: true }).catch(none), this.resolver.resolve6(name, { ttl: true }).catch(none)]);
      const found = [...v4, ...v6].slice(0, ADDRESSES_PER_NAME);
      const addresses = found.map((a) => a.address);
      // Node gives the TTLs of the first 256 records only (the rest undefined): a NaN here is not kept.
      const ttl = Math.min(MAX_KEPT_SECONDS, ...found.map((a) => a.ttl));
      if (addresses.length > 0 && ttl > 0) this.keep(account, name, addresses, Date.now() + ttl * 1000);
      return addresses;
    } finally {
      release();
    }
  }

  private keep(account: string, name: string, addresses: string[], until: number): void {
    this.forget(name);
    let mine = this.keptBy.get(account);
    if (!mine) this.keptBy.set(account, (mine = new Set()));
    if (mine.size >= KEPT_NAMES_PER_ACCOUNT) this.forget(mine.values().next().value!);
    if (this.kept.size >= MAX_KEPT_NAMES) this.forget(this.kept.keys().next().value!);
    this.kept.set(name, { addresses, until, account });
    // Looked up again: forget() may have dropped the account's set when it held only this name.
    if (!this.keptBy.has(account)) this.keptBy.set(account, mine);
    mine.add(name);
  }

  private forget(name: string): void {
    const entry = this.kept.get(name);
    if (!entry) return;
    this.kept.delete(name);
    const theirs = this.keptBy.get(entry.account);
    theirs?.delete(name);
    if (theirs?.size === 0) this.keptBy.delete(entry.account);
  }

  /** A running slot of the account's (its release), after waiting in its queue; undefined when the queue is full. */
  private async slot(key: string): Promise<(() => void) | undefined> {
    let account = this.accounts.get(key);
    if (!account) this.accounts.set(key, (account = { running: 0, waiting: [] }));
    const lookups = account;
    if (lookups.running < LOOKUPS_PER_ACCOUNT) lookups.running++;
    else if (lookups.waiting.length >= QUEUED_PER_ACCOUNT) return undefined;
    else await new Promise<void>((resolve) => lookups.waiting.push(resolve));
    return () => {
      const next = lookups.waiting.shift();
      if (next) return next();
      if (--lookups.running === 0) this.accounts.delete(key);
    };
  }
}
