import { createHash, createHmac } from "node:crypto";

/** The hash constructor @smithy/signature-v4 takes (`sha256` option), on node:crypto: SHA-256, or HMAC-SHA256 with a secret. */
export class Sha256 {
  private readonly h;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.h = secret === undefined ? createHash("sha256") : createHmac("sha256", typeof secret === "string" ? secret : Buffer.from(secret as Uint8Array));
  }
  update(d: string | Uint8Array) {
    this.h.update(d);
  }
  async digest() {
    return new Uint8Array(this.h.digest());
  }
}
