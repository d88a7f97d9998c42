// What this machine's WebGPU adapter offers (Dawn in Node): its info (subgroup sizes included), features and
// limits, as JSON on stdout. Usage: node probe.mjs
import { nodeGpu } from '../src/gpu/node';
import { runMain } from './cli';

async function main() {
  const adapter = await nodeGpu().requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) throw new Error('no adapter');
  const limits: Record<string, number> = {};
  for (const k in adapter.limits) limits[k] = (adapter.limits as unknown as Record<string, number>)[k];
  const info: Record<string, unknown> = {};
  for (const k in adapter.info) info[k] = (adapter.info as unknown as Record<string, unknown>)[k];
  console.log(JSON.stringify({ info, features: [...adapter.features].sort(), limits }, null, 1));
}

runMain(main);
