import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { join } from "node:path";

export const haveCommand = (cmd: string) => spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;

export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

export interface Pebble {
  /** The ACME directory URL. */
  directory: string;
  /** The PEM of the CA that signed pebble's own HTTPS certificate (what ACME clients must trust). */
  serverCaFile: string;
  /** pebble's management interface (e.g. /roots/0: the root of the certificates it issues). */
  managementUrl: string;
  process: ChildProcess;
}

/**
 * Starts pebble (Let's Encrypt's test ACME server, Debian's package) in `dir`, validating DNS-01 by asking the DNS
 * server at `dnsServer` ("127.0.0.1:port"). Its HTTPS certificate is made here with openssl and signed by a CA of
 * the test (`serverCaFile`). Resolves once it listens. `alwaysValid`: pebble takes every challenge as answered
 * without looking (PEBBLE_VA_ALWAYS_VALID), for tests of the ACME client alone.
 */
export async function startPebble(dir: string, dnsServer: string, opts: { alwaysValid?: boolean } = {}): Promise<Pebble> {
  const f = (n: string) => join(dir, n);
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f("ca.key"), "-out", f("ca.pem"), "-days", "2", "-subj", "/CN=test ca"],
    { stdio: "ignore" },
  );
  execFileSync("openssl", ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", f("leaf.key"), "-out", f("leaf.csr"), "-subj", "/CN=localhost"], {
    stdio: "ignore",
  });
  writeFileSync(f("ext.cnf"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  execFileSync(
    "openssl",
    [
      "x509",
      "-req",
      "-in",
      f("leaf.csr"),
      "-CA",
      f("ca.pem"),
      "-CAkey",
      f("ca.key"),
      "-CAcreateserial",
      "-out",
      f("leaf.pem"),
      "-days",
      "2",
      "-extfile",
      f("ext.cnf"),
    ],
    { stdio: "ignore" },
  );
  // A port freePort found may be taken again before pebble binds it (tests run two at a time), and pebble then
  // stops: a few attempts, each on new ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnPebble(f, dnsServer, opts);
    } catch (err) {
      if (attempt === 3) throw err;
    }
  }
}

async function spawnPebble(f: (name: string) => string, dnsServer: string, opts: { alwaysValid?: boolean }): Promise<Pebble> {
  const acmePort = await freePort();
  let mgmtPort = await freePort();
  while (mgmtPort === acmePort) mgmtPort = await freePort();
  writeFileSync(
    f("pebble.json"),
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${acmePort}`,
        managementListenAddress: `127.0.0.1:${mgmtPort}`,
        certificate: f("leaf.pem"),
        privateKey: f("leaf.key"),
        httpPort: 5002,
        tlsPort: 5001,
        ocspResponderURL: "",
        externalAccountBindingRequired: false,
      },
    }),
  );
  const pebble = spawn("pebble", ["-config", f("pebble.json"), "-dnsserver", dnsServer], {
    // No random sleeps before validating, and no nonces refused at random: the test checks outcomes, not retries.
    env: { ...process.env, PEBBLE_VA_NOSLEEP: "1", PEBBLE_WFE_NONCEREJECT: "0", ...(opts.alwaysValid && { PEBBLE_VA_ALWAYS_VALID: "1" }) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const started = new Promise<void>((resolve, reject) => {
    let out = "";
    // A hang guard, not a timing check.
    const timer = setTimeout(() => reject(new Error(`pebble did not start: ${out}`)), 30_000);
    const on = (d: Buffer) => {
      out += d.toString();
      if (out.includes("Listening on")) {
        clearTimeout(timer);
        resolve();
      }
    };
    pebble.stdout!.on("data", on);
    pebble.stderr!.on("data", on);
    pebble.on("exit", (code) => reject(new Error(`pebble exited with ${code}: ${out}`)));
  });
  try {
    await started;
    // "Listening on" is the ACME listener's line; the management listener (the roots tests fetch) may come a moment
    // later, or not at all when its port was taken: a CI run was refused there.
    await listening(mgmtPort, pebble);
  } catch (err) {
    pebble.kill("SIGTERM");
    throw err;
  }
  return { directory: `https://127.0.0.1:${acmePort}/dir`, serverCaFile: f("ca.pem"), managementUrl: `https://127.0.0.1:${mgmtPort}`, process: pebble };
}

/** Resolves once something accepts TCP connections on loopback `port`; rejects when `owner` exited first. */
async function listening(port: number, owner: ChildProcess, deadlineMs = 30_000): Promise<void> {
  const start = Date.now();
  for (;;) {
    if (owner.exitCode !== null || owner.signalCode !== null) throw new Error(`pebble exited before listening on 127.0.0.1:${port}`);
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (accepted) return;
    if (Date.now() - start > deadlineMs) throw new Error(`nothing listens on 127.0.0.1:${port}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
