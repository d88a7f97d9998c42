// How the CLI tests run the CLI: src/cli/main.ts bundled once per test process by esbuild and run by node, rather
// than `node --import tsx src/cli/main.ts`, which transformed the whole CLI again on every spawn (twice: the CLI
// re-runs itself as a quiet child; ~2 s of CPU each time, most of those suites' time on CI's two cores). The
// bundle lies under node_modules/.cache so that `webgpu` (left external) resolves as it does for the sources;
// SHADERS_DIR points it at the repo's WGSL, which the sources find beside themselves.

import { spawnSync } from 'node:child_process';
import { renameSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildSync } from 'esbuild';

let bundle: string | null = null;

/** The node arguments that run the CLI (before its own arguments). */
export function cliArgs(): string[] {
  if (!bundle) {
    // Built by each test process (the sources may have changed since the last run), then renamed into place:
    // processes building at once leave one whole file, and a child already reading one keeps it.
    const dir = resolve('node_modules/.cache/cli-tests');
    const tmp = resolve(dir, `main-${process.pid}.mjs`);
    buildSync({
      entryPoints: [resolve('src/cli/main.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: tmp,
      external: ['webgpu'],
      logLevel: 'warning',
    });
    bundle = resolve(dir, 'main.mjs');
    renameSync(tmp, bundle);
  }
  return [bundle];
}

/** The environment a CLI child needs besides `extra` (and this process's). */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, SHADERS_DIR: resolve('shaders'), ...extra };
}

/** Runs the CLI to its end (two minutes at most): the exit code, stdout, and stderr's lines less npm's warnings. */
export function runCli(args: string[]): { code: number | null; stdout: string; stderr: string[] } {
  const r = spawnSync(process.execPath, [...cliArgs(), ...args], {
    encoding: 'utf8',
    timeout: 120_000,
    env: cliEnv(),
  });
  return {
    code: r.status,
    stdout: r.stdout,
    stderr: r.stderr.split('\n').filter((l) => l && !l.startsWith('npm warn')),
  };
}
