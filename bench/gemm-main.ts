// The entry of bench/gemm.ts's command line when bundled for a device call (gemm.ts runs its main only when it is the
// script itself): `npx esbuild bench/gemm-main.ts --bundle --platform=node --format=esm --target=node20
// --outfile=.devpack/gemm-bench.mjs --external:webgpu`, then `node gemm-bench.mjs <gemm.ts flags>`.
import { gemmBenchMain } from './gemm';

gemmBenchMain(process.argv.slice(2)).then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
