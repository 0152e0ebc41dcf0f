import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Longest unix socket path Linux accepts (sun_path is 108 bytes with its terminating NUL). */
const SUN_PATH_MAX = 107;
/** Room for the longest socket file name the runtime creates (`handlers-<n>.sock`). */
const NAME_ROOM = 32;

/**
 * A private (0700) directory for the runtime's unix sockets: the edge → workerd and workerd → binding
 * server hops. Unix sockets cost less per request than loopback TCP and only this user can connect to them.
 * It is `<runDir>/_sockets` (no script name has an underscore, so no script's directory can clash with it)
 * unless that path is too long for a socket address; then a fresh one in the system temp directory.
 */
export class SocketDir {
  readonly path: string;
  private seq = 0;

  constructor(runDir: string) {
    const preferred = join(runDir, "_sockets");
    if (Buffer.byteLength(preferred) + NAME_ROOM <= SUN_PATH_MAX) {
      mkdirSync(preferred, { recursive: true, mode: 0o700 });
      this.path = preferred;
    } else {
      this.path = mkdtempSync(join(tmpdir(), "edge-sock-"));
    }
  }

  /** A socket path not used before by this directory. */
  next(prefix: string): string {
    return join(this.path, `${prefix}-${++this.seq}.sock`);
  }

  remove(): void {
    rmSync(this.path, { recursive: true, force: true });
  }
}
