// Preloaded into the platform by hops.mjs when PROF_DIR is set: SIGUSR2 starts the V8 CPU profiler, the next
// SIGUSR2 writes the profile to $PROF_OUT (--cpu-prof cannot be given through NODE_OPTIONS).
const inspector = require("node:inspector");
const fs = require("node:fs");
const s = new inspector.Session();
s.connect();
s.post("Profiler.enable");
s.post("Profiler.setSamplingInterval", { interval: 200 });
let started = false;
process.on("SIGUSR2", () => {
  if (!started) {
    s.post("Profiler.start");
    started = true;
    return;
  }
  s.post("Profiler.stop", (err, { profile }) => {
    fs.writeFileSync(`${process.env.PROF_OUT}/p-${process.pid}-${Date.now()}.cpuprofile`, JSON.stringify(profile));
    started = false;
  });
});
