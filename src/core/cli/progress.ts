export interface Progress {
  update(done: number): void;
  stop(): void;
}

const noop: Progress = { update() {}, stop() {} };

/** A progress bar on stderr when it is a terminal; nothing otherwise (logs and pipes stay clean). */
export async function createProgress(stderr: NodeJS.WriteStream, total: number, label: string, unit: "bytes" | "items" = "items"): Promise<Progress> {
  if (!stderr.isTTY || total <= 0) return noop;
  const { default: cliProgress } = await import("cli-progress");
  const fmt = (n: number) => (unit === "bytes" ? `${(n / 1048576).toFixed(1)} MiB` : String(n));
  const bar = new cliProgress.SingleBar(
    {
      stream: stderr,
      format: `${label} [{bar}] {percentage}% | {doneFmt}/{totalFmt} | ETA {eta}s`,
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0, { doneFmt: fmt(0), totalFmt: fmt(total) });
  return {
    update: (done) => bar.update(done, { doneFmt: fmt(done), totalFmt: fmt(total) }),
    stop: () => bar.stop(),
  };
}
