// Checks the double-float library on whatever adapter Node's Dawn finds (SwiftShader here, a real GPU through
// ../shared/tools/devpack.sh): the self-test, whether `fma` is fused (TwoProd exact through it), and the worst
// error of every df op and function on seeded random inputs with DF_FMA = true and = false, against f64.
// Prints one JSON object. Run: npx tsx tools/df-check.ts [n per op] [seed]
// (bundled: esbuild tools/df-check.ts --bundle --platform=node --format=esm --external:webgpu; SHADERS_DIR).
import { dfSelfTest } from '../src/engine/df-selftest';
import { acquireGpu } from '../src/gpu/device';
import { nodeGpu } from '../src/gpu/node';
import { PipelineCache } from '../src/gpu/pipelines';
import { Program } from '../src/gpu/program';
import { recordReadback, uploadBuffer } from '../src/gpu/readback';
import { DF_ABS, DF_REL, dfRandomCases, U2 } from '../src/kernels/oracle/df-random-cases';
import { dfReference, eftExact } from '../src/kernels/oracle/df-reference';
import { DF_EFT, DF_OP_CODES, type DfOp, dfProbe, packDfCases } from '../src/kernels/oracle/df-test-kernel';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { mulberry32 } from '../src/numeric/random';

const n = Number(process.argv[2] ?? 20000);
const seed = Number(process.argv[3] ?? 1);

async function main(): Promise<void> {
  const ctx = await acquireGpu(nodeGpu());
  const device = ctx.device;
  const pipelines = new PipelineCache(device, nodeShaderSource());
  const selfTest = await dfSelfTest(device, pipelines);
  const ops = Object.keys(DF_OP_CODES) as DfOp[];
  const report: Record<string, Record<string, unknown>> = {};
  for (const dfFma of [true, false]) {
    const t0 = performance.now();
    const rows: Record<string, unknown> = {};
    for (const op of ops) {
      const cases = dfRandomCases(op, mulberry32(seed + DF_OP_CODES[op]), n);
      const p = packDfCases(cases);
      const bufs = [p.op, p.a, p.b].map((d) => uploadBuffer(device, d, 'df-check.in'));
      const y = uploadBuffer(device, new Float32Array(2 * cases.length).fill(Number.NaN), 'df-check.y');
      const program = new Program(device, pipelines);
      program.add(dfProbe('df-check', { op: bufs[0], a: bufs[1], b: bufs[2], y }, cases.length, { dfFma }));
      const enc = device.createCommandEncoder();
      program.encode(enc);
      const finish = recordReadback(device, enc, [{ src: y, bytes: 8 * cases.length }]);
      device.queue.submit([enc.finish()]);
      const [out] = await finish();
      program.dispose();
      for (const b of [...bufs, y]) b.destroy();
      if (DF_EFT.has(op)) {
        const inexact = cases.filter(
          (c, i) => !eftExact(op, c.a[0], c.b[0], out[2 * i], out[2 * i + 1]),
        ).length;
        rows[op] = { inexact, of: cases.length };
        continue;
      }
      let worst = 0;
      let at = Number.NaN;
      let over = 0;
      const abs = DF_ABS[op] ?? 0;
      cases.forEach((c, i) => {
        const got = out[2 * i] + out[2 * i + 1];
        const want = dfReference(op, c.a, c.b);
        const err = Math.abs(got - want);
        const r =
          want === 0 ? (err === 0 ? 0 : Number.POSITIVE_INFINITY) : Math.max(0, err - abs) / Math.abs(want);
        const rr = Number.isFinite(got) || got === want ? r : Number.POSITIVE_INFINITY;
        if (!(rr <= worst)) {
          worst = rr;
          at = c.a[0] + c.a[1];
        }
        if (!(err <= DF_REL[op] * Math.abs(want) + abs)) over++;
      });
      rows[op] = { worstRel: worst, worstU2: worst / U2, at, overBound: over, of: cases.length };
    }
    rows.ms = performance.now() - t0;
    report[`DF_FMA=${dfFma}`] = rows;
  }
  console.log(JSON.stringify({ adapter: ctx.adapter, selfTest, n, seed, report }, null, 1));
  device.destroy();
  process.exit(0);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
