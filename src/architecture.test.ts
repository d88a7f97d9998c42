// The layering of docs/ARCHITECTURE.md, checked: the table between its `layers` markers says which parts each part
// of src/ may import; every import of every module of src/ (static, `export … from`, dynamic `import()`, Vite's
// `import.meta.glob`) is resolved and held against it. Test files (*.test.ts) are not held to it (the doc says why).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');

/** part -> the parts it may import (itself always). */
type Layers = Map<string, Set<string>>;

/** The table of docs/ARCHITECTURE.md between `<!-- layers -->` and `<!-- /layers -->`. */
function parseLayers(markdown: string): Layers {
  const m = /<!-- layers -->([\s\S]*?)<!-- \/layers -->/.exec(markdown);
  if (!m) throw new Error('docs/ARCHITECTURE.md has no <!-- layers --> table');
  const layers: Layers = new Map();
  for (const line of m[1].split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 5 || cells[1] === 'part' || /^-+$/.test(cells[1])) continue;
    const may = cells[3] === '—' ? [] : cells[3].split(',').map((s) => s.trim());
    layers.set(cells[1], new Set(may));
  }
  return layers;
}

/** The import specifiers of one module's text (comments removed first). */
function importsOf(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const out: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of code.matchAll(re)) out.push(m[1]);
  for (const m of code.matchAll(/import\.meta\.glob\(\s*(\[[^\]]*\]|['"][^'"]+['"])/g))
    for (const g of m[1].matchAll(/['"]([^'"]+)['"]/g)) out.push(g[1]);
  return out;
}

/** The part a path under the repository root belongs to: src/<part>/…, or 'shaders'; null elsewhere. */
function partOf(path: string): string | null {
  const rel = relative(ROOT, path).split(/[\\/]/);
  if (rel[0] === 'shaders') return 'shaders';
  if (rel[0] !== 'src' || rel.length < 3) return null;
  return rel[1];
}

interface Violation {
  file: string;
  spec: string;
  from: string;
  to: string;
}

/** Imports of `files` (path -> text) that the layers do not allow. */
function violations(layers: Layers, files: Map<string, string>): Violation[] {
  const out: Violation[] = [];
  for (const [file, text] of files) {
    const from = partOf(file);
    if (from === null) continue;
    for (const spec of importsOf(text)) {
      if (!spec.startsWith('.')) continue;
      const to = partOf(resolve(dirname(file), spec.replace(/\?.*$/, '')));
      if (to === null || to === from) continue;
      const ok = to === 'shaders' ? from === 'kernels' : (layers.get(from)?.has(to) ?? false);
      if (!ok) out.push({ file: relative(ROOT, file), spec, from, to });
    }
  }
  return out;
}

function modules(dir: string, out = new Map<string, string>()): Map<string, string> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== 'testdata') modules(p, out);
    } else if (/\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name) && !name.endsWith('.d.ts')) {
      out.set(p, readFileSync(p, 'utf8'));
    }
  }
  return out;
}

/** The module a relative import of `file` names (the .ts/.tsx file, or the folder's index), or null. */
function targetOf(file: string, spec: string, files: ReadonlyMap<string, string>): string | null {
  const base = resolve(dirname(file), spec.replace(/\?.*$/, ''));
  for (const p of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')])
    if (files.has(p)) return p;
  return null;
}

/** Every circle of modules importing each other (type imports included), each as its files from one of them. */
function moduleCircles(files: ReadonlyMap<string, string>): string[][] {
  const edges = new Map<string, string[]>();
  for (const [file, text] of files) {
    const to = importsOf(text)
      .filter((s) => s.startsWith('.'))
      .map((s) => targetOf(file, s, files))
      .filter((t): t is string => t !== null);
    edges.set(file, to);
  }
  // Tarjan's strongly connected components: a component of two or more modules is a circle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(relative(ROOT, w));
      } while (w !== v);
      if (c.length > 1) out.push(c.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return out;
}

const layers = parseLayers(readFileSync(join(ROOT, 'docs/ARCHITECTURE.md'), 'utf8'));

describe('the layering of docs/ARCHITECTURE.md', () => {
  it('places every part of src/ and names only parts it places', () => {
    const parts = readdirSync(SRC).filter((n) => statSync(join(SRC, n)).isDirectory());
    expect(parts.filter((p) => !layers.has(p))).toEqual([]);
    const named = [...layers.values()].flatMap((s) => [...s]);
    expect(named.filter((p) => !layers.has(p))).toEqual([]);
  });

  it('is a layering: no two parts may import each other, directly or round a circle', () => {
    const reach = (from: string, seen = new Set<string>()): Set<string> => {
      for (const to of layers.get(from) ?? []) if (!seen.has(to)) reach(to, seen.add(to));
      return seen;
    };
    expect([...layers.keys()].filter((p) => reach(p).has(p))).toEqual([]);
  });

  it('holds for every import of every module of src/', () => {
    const all = modules(SRC);
    // The reader sees the imports (a broken pattern would find none and pass everything).
    const seen = [...all.values()].reduce(
      (n, t) => n + importsOf(t).filter((s) => s.startsWith('..')).length,
      0,
    );
    expect(seen).toBeGreaterThan(500);
    const found = violations(layers, all).map((v) => `${v.file}: ${v.from} -> ${v.to} ('${v.spec}')`);
    expect(found).toEqual([]);
  });

  it('no module of src/ imports itself round a circle of modules (type imports included)', () => {
    expect(moduleCircles(modules(SRC))).toEqual([]);
    // A planted circle of three is found, and only it.
    const planted = new Map([
      [join(SRC, 'compare/a.ts'), "import type { B } from './b';\nexport type A = 1;\n"],
      [join(SRC, 'compare/b.ts'), "import { c } from './c';\nexport type B = 2;\n"],
      [join(SRC, 'compare/c.ts'), "export { type A } from './a';\nexport const c = 3;\n"],
      [join(SRC, 'compare/d.ts'), "import type { A } from './a';\n"],
    ]);
    expect(moduleCircles(planted)).toEqual([['src/compare/a.ts', 'src/compare/b.ts', 'src/compare/c.ts']]);
  });

  it('catches an import that breaks it (a planted one)', () => {
    const planted = new Map([
      [join(SRC, 'ui/Planted.tsx'), "import { seededWeights } from '../kernels/seeded-weights';\n"],
      [join(SRC, 'kernels/planted.ts'), "import type { RunFile } from '../model/run-file';\n"],
      [join(SRC, 'numeric/planted.ts'), "export { gpu } from '../gpu/device';\n"],
      [join(SRC, 'engine/planted.ts'), "const m = import('../compare/analyze');\n"],
      [join(SRC, 'state/planted.ts'), "const f = import.meta.glob('../../shaders/fused/*.wgsl');\n"],
      [
        join(SRC, 'ui/fine.tsx'),
        "// import { x } from '../kernels/gemm';\nimport { y } from '../state/store';\n",
      ],
    ]);
    expect(violations(layers, planted).map((v) => `${v.from}->${v.to}`)).toEqual([
      'ui->kernels',
      'kernels->model',
      'numeric->gpu',
      'engine->compare',
      'state->shaders',
    ]);
  });
});
