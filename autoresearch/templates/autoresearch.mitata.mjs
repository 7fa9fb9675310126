// Written by `autoresearch init` for a package benched with mitata: node loads this module
// before the package's own bench (NODE_OPTIONS=--import, in autoresearch.sh). Where the bench
// imports 'mitata', it gets mitata whole but for `run`, which runs mitata's own and then
// prints one METRIC line per benchmark run: its median (p50) in nanoseconds, named
// `<group>_<name>_ns` in lower case (`fib 20` -> `fib_20_ns`), and its fastest sample beside it
// (`fib_20_min_ns`), as `format: "json"` output is read. The lines go to the file AUTORESEARCH_METRICS_OUT names, which autoresearch.sh hands on
// to the loop's METRIC channel once the bench has exited; to stdout when it is not set.
// mitata 1, as an ES module (it ships no other). A run that threw fails the bench, naming it.
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';

const out = process.env.AUTORESEARCH_METRICS_OUT;

function metricName(...parts) {
  const name = parts
    .filter((part) => part || part === 0)
    .join('_')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return /^[0-9]/.test(name) ? `bench_${name}` : name;
}

globalThis[Symbol.for('autoresearch.mitata')] = (results) => {
  const groups = (results.layout || []).map((group) => group.name || '');
  for (const bench of results.benchmarks || []) {
    const group = Number.isInteger(bench.group) ? groups[bench.group] : '';
    for (const run of bench.runs || []) {
      if (run.error) {
        process.stderr.write(`mitata benchmark '${run.name}' failed: ${run.error.stack || run.error}\n`);
        process.exitCode = 1;
        continue;
      }
      if (!run.stats) continue;
      let line = `METRIC ${metricName(group, run.name, 'ns')}=${run.stats.p50}\n`;
      if (Number.isFinite(run.stats.min)) {
        line += `METRIC ${metricName(group, run.name, 'min', 'ns')}=${run.stats.min}\n`;
      }
      if (out) appendFileSync(out, line);
      else process.stdout.write(line);
    }
  }
};

// The resolve hook (node runs it off the main thread): 'mitata' from anywhere but the wrapper
// resolves to a wrapper that re-exports the real module with `run` reporting after it.
const hooks = `
export async function resolve(specifier, context, next) {
  const found = await next(specifier, context);
  if (specifier !== 'mitata' || (context.parentURL || '').startsWith('data:')) return found;
  const real = JSON.stringify(found.url);
  const wrapper = [
    'import * as real from ' + real + ';',
    'export * from ' + real + ';',
    'export async function run(...args) {',
    '  const results = await real.run(...args);',
    "  globalThis[Symbol.for('autoresearch.mitata')](results);",
    '  return results;',
    '}',
  ].join('\\n');
  return { url: 'data:text/javascript,' + encodeURIComponent(wrapper), shortCircuit: true };
}
`;
register('data:text/javascript,' + encodeURIComponent(hooks));
