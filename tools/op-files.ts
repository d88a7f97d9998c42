// What an op costs in files: for each of the Llama family's ops (RMSNorm with Qwen3's q/k norm, SwiGLU with its
// gate/up projections, GQA's KV heads), the files outside tests whose path or code names it — src/ and shaders/,
// comments removed (words in strings count), tests and their fixtures (*.test.ts, *.testdata.ts, testing.ts,
// *.bench.ts) left out — grouped by what the file is. docs/ARCHITECTURE.md's "Adding an op" table is this output.
// Run: npx tsx tools/op-files.ts [--list] [--lines] (--lines: under each file, the code lines that name the op, so
// what a file is counted for can be read)

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The ops counted and the names their code goes by (op kinds, launchers, kernels, config fields, HF modules). */
export const OP_NAMES: Readonly<Record<string, RegExp>> = {
  RMSNorm: /rms_?norm|qk_?norm|\bq_norm\b|\bk_norm\b|\bqNorm\b|\bkNorm\b/i,
  SwiGLU: /swiglu|gate_?up|gate_proj|up_proj/i,
  GQA: /kv_?heads|numKvHeads|num_key_value_heads|gqa/i,
};

/**
 * What a file is, by where it lies (the groups of the table), and whose it is: the op's own (its registry entries,
 * its module, its shaders, the kernels it shares with the other family), the family's own (the files only the Llama
 * family has: its config, weights, types, engine), or elsewhere — a file that would have to change for the op though
 * it belongs to neither.
 */
export const GROUPS: readonly [string, (path: string) => boolean, Owner][] = [
  ['registry (src/ops/)', (p) => p.startsWith('src/ops/'), 'op'],
  ['op module (src/kernels/ops/)', (p) => p.startsWith('src/kernels/ops/'), 'op'],
  ['fp64 oracle (src/kernels/cpu/)', (p) => p.startsWith('src/kernels/cpu/'), 'op'],
  ['WGSL (shaders/)', (p) => p.startsWith('shaders/'), 'op'],
  ['launchers (src/kernels/)', (p) => p.startsWith('src/kernels/'), 'op'],
  ["the family's own (llama-*.ts, family-llama.ts)", (p) => FAMILY_OWN.test(p), 'family'],
  ['engine (src/engine/)', (p) => p.startsWith('src/engine/'), 'elsewhere'],
  ['causes and analyses (src/compare/)', (p) => p.startsWith('src/compare/'), 'elsewhere'],
  [
    'config, weights, random models (src/model/, src/numeric/)',
    (p) => /^src\/(model|numeric)\//.test(p),
    'elsewhere',
  ],
  ['faults, presets (src/run/)', (p) => p.startsWith('src/run/'), 'elsewhere'],
  ['page words (src/ui/, src/state/)', (p) => /^src\/(ui|state)\//.test(p), 'elsewhere'],
  ['other', () => true, 'elsewhere'],
];

/** Whose a file is (GROUPS). */
export type Owner = 'op' | 'family' | 'elsewhere';

/** The Llama family's own files: its config reader, weights, random models, types and engine. */
const FAMILY_OWN = /^src\/(model|numeric|engine)\/(llama-[^/]*|family-llama)\.ts$/;

const TEST = /\.(test|testdata|bench)\.tsx?$|(^|\/)testing\.ts$/;

/** A module's code without its comments (line and block; a `//` inside a string is taken as a comment too). */
export function codeOf(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');
}

function* files(root: string, dir: string): Generator<string> {
  for (const name of readdirSync(join(root, dir))) {
    const rel = `${dir}/${name}`;
    if (statSync(join(root, rel)).isDirectory()) yield* files(root, rel);
    else if (/\.(tsx?|wgsl)$/.test(name) && !TEST.test(rel)) yield rel;
  }
}

/** For each op, its files by group (paths relative to the repository root). */
export function opFiles(root: string): Map<string, Map<string, string[]>> {
  const all = [...files(root, 'src'), ...files(root, 'shaders')].sort();
  const out = new Map<string, Map<string, string[]>>();
  for (const [op, re] of Object.entries(OP_NAMES)) {
    const byGroup = new Map<string, string[]>(GROUPS.map(([g]) => [g, []]));
    for (const path of all) {
      if (!re.test(path) && !re.test(codeOf(readFileSync(join(root, path), 'utf8')))) continue;
      const group = GROUPS.find(([, is]) => is(path))?.[0] ?? 'other';
      byGroup.get(group)?.push(path);
    }
    out.set(op, byGroup);
  }
  return out;
}

/** A file's code lines that name the op (`re`), numbered as in its code without comments, as an indented list. */
export function namingLines(root: string, path: string, re: RegExp): string {
  const code = codeOf(readFileSync(join(root, path), 'utf8')).split('\n');
  const hits = code.flatMap((l, i) => (re.test(l) ? [`      ${i + 1}: ${l.trim().slice(0, 110)}`] : []));
  return [`    ${path}`, ...hits].join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const list = process.argv.includes('--list');
  const lines = process.argv.includes('--lines');
  for (const [op, byGroup] of opFiles(root)) {
    const total = [...byGroup.values()].reduce((n, f) => n + f.length, 0);
    const of = (o: Owner) =>
      GROUPS.filter(([, , w]) => w === o).reduce((n, [g]) => n + (byGroup.get(g)?.length ?? 0), 0);
    console.log(
      `${op}: ${total} files — the op's own ${of('op')}, the family's own ${of('family')}, elsewhere ${of('elsewhere')}`,
    );
    for (const [g, fs] of byGroup) {
      if (fs.length === 0) continue;
      const names = list ? fs.join(' ') : fs.map((f) => f.replace(/^(src|shaders)\//, '')).join(', ');
      console.log(`  ${fs.length} ${g}: ${names}`);
      if (lines) for (const f of fs) console.log(namingLines(root, f, OP_NAMES[op]));
    }
  }
}
