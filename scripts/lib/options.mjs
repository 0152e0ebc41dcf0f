// Command-line options of the scripts and benchmarks: `--name value`.

/** The number after `--name` on the command line, or `fallback` when it is not there. */
export function numberOption(name, fallback) {
  const argv = process.argv.slice(2);
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
}

/** The text after `--name` on the command line, or `fallback` when it is not there. */
export function stringOption(name, fallback) {
  const argv = process.argv.slice(2);
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : fallback;
}
