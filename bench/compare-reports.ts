// `npx tsx bench/compare-reports.ts DIR_A DIR_B`: the report numbers that bench/comparisons.ts --report wrote for two
// trees (report-<model>.json in each), field by field: what the GPU metrics give exactly (counts, maxUlp, maxAbs,
// histograms, the verdict and its layers) must be equal; sums (meanAbs, relL2, cosineDistance, sqnrDb, perToken) are
// reported by their largest relative difference. Exits 1 on any exact field that differs.
import { readdirSync, readFileSync } from 'node:fs';

const [dirA, dirB] = process.argv.slice(2);
const EXACT = new Set([
  'n',
  'maxAbs',
  'maxUlp',
  'nanCount',
  'infCount',
  'baselineNonFinite',
  'mismatchedNonFinite',
  'nonFiniteMismatch',
  'finiteCount',
  'verdict',
  'firstDivergentLayer',
  'firstBornLayer',
  'name',
]);
let bad = 0;
for (const f of readdirSync(dirA).filter((x) => x.startsWith('report-'))) {
  const a = JSON.parse(readFileSync(`${dirA}/${f}`, 'utf8'));
  const b = JSON.parse(readFileSync(`${dirB}/${f}`, 'utf8'));
  const worst: Record<string, number> = {};
  let exactSeen = 0;
  const walk = (x: unknown, y: unknown, path: string, key: string) => {
    if (Array.isArray(x) && Array.isArray(y)) {
      if (x.length !== y.length) {
        bad++;
        console.log(`${f} ${path}: length ${x.length} vs ${y.length}`);
        return;
      }
      for (const [i, v] of x.entries()) walk(v, y[i], `${path}[${i}]`, key);
      return;
    }
    if (x && y && typeof x === 'object' && typeof y === 'object') {
      for (const k of Object.keys(x)) walk((x as never)[k], (y as never)[k], `${path}.${k}`, k);
      return;
    }
    const exact = EXACT.has(key) || path.includes('.histogram.');
    if (exact) {
      exactSeen++;
      if (x !== y) {
        bad++;
        if (bad < 20) console.log(`${f} ${path}: ${x} vs ${y}`);
      }
      return;
    }
    if (typeof x === 'number' && typeof y === 'number') {
      const r = x === y ? 0 : Math.abs(x - y) / Math.max(Math.abs(x), Math.abs(y));
      worst[key] = Math.max(worst[key] ?? 0, Number.isNaN(r) ? Infinity : r);
    } else if (x !== y) {
      bad++;
      console.log(`${f} ${path}: ${x} vs ${y}`);
    }
  };
  walk(a, b, '', '');
  console.log(
    `${f}: ${exactSeen} exact fields compared; largest relative difference of sums ${JSON.stringify(
      Object.fromEntries(Object.entries(worst).map(([k, v]) => [k, Number(v.toExponential(2))])),
    )}`,
  );
}
console.log(bad ? `${bad} exact fields differ` : 'every exact field equal');
process.exit(bad ? 1 : 0);
