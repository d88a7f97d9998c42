// Writes the tables of bench/RESULTS.md from one run's JSON files (WebGPU bench + PyTorch peer, same call):
//   npx tsx bench/report.ts bench/results/<date>-<gpu>-webgpu.json bench/results/<date>-<gpu>-torch.json
import { readFileSync } from 'node:fs';

interface Row {
  model: string;
  T: number;
  path: string;
  medianMs: number;
  minMs: number;
  dispatches: number;
}
const [webgpuFile, torchFile] = process.argv.slice(2);
const w = JSON.parse(readFileSync(webgpuFile, 'utf8'));
const t = JSON.parse(readFileSync(torchFile, 'utf8'));
const f = (x: number, d = 3) => x.toFixed(d);
const out: string[] = [];
out.push(
  `Adapter: ${w.adapter.vendor} ${w.adapter.device} (${w.adapter.description}); PyTorch ${t.torch}, transformers ${t.transformers} on ${t.gpu}; run ${w.date}.`,
  '',
);
const fused = w.gemm.find((r: { kernel: string }) => r.kernel === 'fused');
const ref = w.gemm.find((r: { kernel: string }) => r.kernel === 'reference');
const mm = t.matmul.find((r: { n: number }) => r.n === 2048);
out.push('| GEMM 2048³ fp32 | ms | TFLOP/s | vs PyTorch |', '|---|---|---|---|');
out.push(
  `| WebGPU fused GEMM core | ${f(fused.ms)} | ${f(fused.gflops / 1e3, 1)} | ${f((100 * fused.gflops) / 1e3 / mm.tflops, 1)}% |`,
);
out.push(
  `| WebGPU reference linear | ${f(ref.ms)} | ${f(ref.gflops / 1e3, 1)} | ${f((100 * ref.gflops) / 1e3 / mm.tflops, 1)}% |`,
);
out.push(`| torch.matmul (TF32 off) | ${f(mm.median_ms)} | ${f(mm.tflops, 1)} | 100% |`, '');
interface Peer {
  model: string;
  T: number;
  attn: string;
  graph?: boolean;
  median_ms?: number;
  error?: string;
}
const peer = (model: string, T: number, attn: string, graph: boolean) =>
  (t.forward as Peer[]).find(
    (x) => x.model === model && x.T === T && x.attn === attn && Boolean(x.graph) === graph,
  );
// A peer cell: its ms and ours as a ratio (peer ms / fused ms: above 1× means the fused forward is faster).
const cell = (p: Peer | undefined, oursMs: number) =>
  p?.median_ms === undefined
    ? `${p?.error ? 'failed' : '-'} | -`
    : `${f(p.median_ms)} | ${f(p.median_ms / oursMs, 2)}×`;
out.push(
  '| model | T | reference ms | fused ms | fused speedup | HF eager ms | eager / fused | HF SDPA ms | SDPA / fused | HF SDPA + CUDA graph ms | graph / fused | dispatches ref / fused |',
);
out.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
const rows = w.forward as Row[];
for (const r of rows.filter((x) => x.path === 'reference')) {
  const fz = rows.find((x) => x.path === 'fused' && x.model === r.model && x.T === r.T)!;
  out.push(
    `| ${r.model} | ${r.T} | ${f(r.medianMs)} | ${f(fz.medianMs)} | ${f(r.medianMs / fz.medianMs, 2)}× | ${cell(peer(r.model, r.T, 'eager', false), fz.medianMs)} | ${cell(peer(r.model, r.T, 'sdpa', false), fz.medianMs)} | ${cell(peer(r.model, r.T, 'sdpa', true), fz.medianMs)} | ${r.dispatches} / ${fz.dispatches} |`,
  );
}
// torch.matmul at every GEMM shape of the models (M = T); ours where the WebGPU run measured the same shape.
const shapes = (
  t.matmul as {
    op?: string;
    model?: string;
    M?: number;
    N?: number;
    K?: number;
    median_ms: number;
    tflops: number;
  }[]
).filter((x) => x.M !== undefined);
if (shapes.length) {
  out.push(
    '',
    '| GEMM (M × N × K) | first model / op | torch.matmul ms | TFLOP/s | ours ms | ours / torch |',
    '|---|---|---|---|---|---|',
  );
  for (const m of shapes) {
    const o = (w.gemmShapes ?? []).find(
      (x: { M: number; N: number; K: number }) => x.M === m.M && x.N === m.N && x.K === m.K,
    );
    out.push(
      `| ${m.M} × ${m.N} × ${m.K} | ${m.model} ${m.op} | ${f(m.median_ms)} | ${f(m.tflops, 1)} | ${o ? f(o.ms) : '-'} | ${o ? `${f((100 * m.median_ms) / o.ms, 1)}%` : 'not measured'} |`,
    );
  }
}
const c = w.compareCost;
out.push(
  '',
  `Full compare of ${c.model.replace(/^.*\//, '')} (T = ${c.T}): ${f(c.compareMs, 1)} ms vs two bare forwards ${f(c.twoBareForwardsMs, 1)} ms = ${f(c.ratio, 2)}× (the first compare of a prompt, which computes the fp64 oracle: ${c.firstCompareMs ? `${f(c.firstCompareMs, 1)} ms = ${f(c.firstRatio, 2)}×` : 'not measured'}); phases (ms): ${Object.entries(
    c.phases as Record<string, number>,
  )
    .map(([k, v]) => `${k} ${f(v, 1)}`)
    .join(', ')}.`,
);
if (w.attention) {
  out.push('', '| attention | H | T | hd | ms |', '|---|---|---|---|---|');
  for (const a of w.attention)
    out.push(`| ${a.kernel} | ${a.H} | ${a.T} | ${a.hd} | ${a.skipped ? a.skipped : f(a.ms)} |`);
}
console.log(out.join('\n'));
