// End-to-end tests of the built app in Debian's full Chromium with WebGPU on SwiftShader (a CPU Vulkan
// driver: slow, so the timeouts are generous). Playwright's own browsers are never downloaded or used.
import { defineConfig } from '@playwright/test';

export const CHROMIUM_PATH = '/usr/bin/chromium';
/** The network here is closed: keep Chromium from trying. */
export const QUIET_FLAGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** WebGPU on SwiftShader (see ../shared/GPU-NOTES.md); without these requestAdapter() returns null. */
export const WEBGPU_FLAGS = [
  '--enable-unsafe-webgpu',
  '--enable-unsafe-swiftshader',
  '--use-webgpu-adapter=swiftshader',
];
// E2E_PORT and E2E_OUT let two checkouts' suites (or two people on one machine) run side by side: each its own
// preview server and build folder.
const PORT = Number(process.env.E2E_PORT ?? 4173);
const OUT = process.env.E2E_OUT ?? 'dist';
const CHROMIUM = {
  browserName: 'chromium' as const,
  launchOptions: { executablePath: CHROMIUM_PATH, args: [...WEBGPU_FLAGS, ...QUIET_FLAGS] },
};
/** Specs that run after the others, with no second browser beside them (see `workers`). */
const ALONE = /custom-kernel\.spec\.ts$/;

export default defineConfig({
  testDir: 'e2e',
  outputDir: process.env.E2E_RESULTS ?? 'test-results',
  timeout: 300_000,
  expect: { timeout: 30_000 },
  retries: 0,
  // Two spec files at a time (each file's tests in order): on CI's two cores the suite took 7.7 min with one
  // browser and 5.3 with two (2026-11-27), the vitest suite being done by then. The custom-kernel specs run
  // afterwards, alone (project "chromium-alone"): one of them sets a 3 s watchdog on custom GPU code, which a
  // second browser sharing the cores could trip.
  workers: 2,
  fullyParallel: false,
  forbidOnly: true,
  reporter: [['list']],
  use: {
    baseURL: `http://localhost:${PORT}/`,
    headless: true,
    screenshot: 'only-on-failure',
    actionTimeout: 30_000,
    navigationTimeout: 60_000,
  },
  projects: [
    { name: 'chromium', testIgnore: ALONE, use: CHROMIUM },
    { name: 'chromium-alone', testMatch: ALONE, dependencies: ['chromium'], use: CHROMIUM },
  ],
  webServer: {
    command: `npm run build -- --outDir ${OUT} && npx vite preview --outDir ${OUT} --port ${PORT} --strictPort`,
    url: `http://localhost:${PORT}/`,
    reuseExistingServer: !process.env.CI,
    timeout: 180_000,
    stdout: 'ignore',
    stderr: 'pipe',
  },
});
