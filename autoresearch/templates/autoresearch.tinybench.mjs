// Written by `autoresearch init` for a package benched with tinybench: node loads this module
// before the package's own bench (NODE_OPTIONS=--import, in autoresearch.sh), and each
// `bench.run()` then prints one METRIC line per task: its median latency in nanoseconds, named
// `<bench name>_<task name>_ns` in lower case (`fib 20` -> `fib_20_ns`), and its fastest
// sample beside it (`fib_20_min_ns`: a machine whose speed comes and goes moves it far less
// than the median; the loop's refusal of a noisy bench names it). The lines go to the
// file AUTORESEARCH_METRICS_OUT names, which autoresearch.sh hands on to the loop's METRIC
// channel once the bench has exited (npm and other launchers pass a child no descriptor but
// the standard three, and the environment whole); to stdout when it is not set.
// tinybench 2 to 6, as an ES module or a CommonJS one: whichever the bench imports is the one
// patched. A task that threw fails the run, naming the task and its error.
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const out = process.env.AUTORESEARCH_METRICS_OUT;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

// Milliseconds, as tinybench counts: the latency's p50 (3 and later), else the samples'
// median, else the mean (2 without samples).
function medianMs(result) {
  const latency = result.latency;
  if (latency && Number.isFinite(latency.p50)) return latency.p50;
  const samples = (latency && latency.samples) || result.samples;
  if (Array.isArray(samples) && samples.length > 0) return median(samples);
  return result.mean;
}

// Milliseconds: the fastest sample (tinybench 3 and later keep it in the latency, 2 beside
// the mean); undefined when neither says.
function fastestMs(result) {
  const latency = result.latency;
  if (latency && Number.isFinite(latency.min)) return latency.min;
  return Number.isFinite(result.min) ? result.min : undefined;
}

function metricName(...parts) {
  const name = parts
    .filter((part) => part)
    .join('_')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return /^[0-9]/.test(name) ? `bench_${name}` : name;
}

function report(bench) {
  for (const task of bench.tasks) {
    const result = task.result;
    if (!result) continue; // a task `todo`, or one never run
    if (result.error) {
      process.stderr.write(`tinybench task '${task.name}' failed: ${result.error.stack || result.error}\n`);
      process.exitCode = 1;
      continue;
    }
    let line = `METRIC ${metricName(bench.name, task.name, 'ns')}=${medianMs(result) * 1e6}\n`;
    const fastest = fastestMs(result);
    if (fastest !== undefined) {
      line += `METRIC ${metricName(bench.name, task.name, 'min', 'ns')}=${fastest * 1e6}\n`;
    }
    if (out) appendFileSync(out, line);
    else process.stdout.write(line);
  }
}

function patch(module) {
  const Bench = module && module.Bench;
  if (!Bench || Bench.prototype.__autoresearch) return;
  Bench.prototype.__autoresearch = true;
  const run = Bench.prototype.run;
  Bench.prototype.run = async function (...args) {
    const done = await run.apply(this, args);
    report(this);
    return done;
  };
  const runSync = Bench.prototype.runSync;
  if (typeof runSync === 'function') {
    Bench.prototype.runSync = function (...args) {
      const done = runSync.apply(this, args);
      report(this);
      return done;
    };
  }
}

try {
  patch(await import('tinybench'));
} catch {
  // not installed where this package resolves it: the bench fails on its own import
}
try {
  patch(createRequire(import.meta.url)('tinybench'));
} catch {
  // tinybench 3 and later are ES modules only: the import above was the one
}
