// The comparison's oracle in the browser: on SwiftShader (a CPU) the engine's own choice is the CPU fp64 oracle;
// ?oracle=gpu runs the double-float oracle on the GPU after its self-test, and the report says which ran and why.
import { expect, test } from '@playwright/test';
import { runToEnd, setInputs, shoot, waitForModel, watchErrors } from './helpers';

for (const [query, kind, reason] of [
  ['', 'cpu', /itself a CPU/],
  ['?oracle=gpu', 'gpu', /self-test passed/],
] as const) {
  test(`the oracle a run used is named (${query || 'default'}: ${kind})`, async ({ page }, testInfo) => {
    const errors = watchErrors(page);
    await page.goto(`./${query}`);
    await waitForModel(page);
    await setInputs(page, 'And God said', 0);
    const ms = await runToEnd(page);
    const note = page.getByTestId('oracle-note');
    await expect(note).toHaveAttribute('data-oracle', kind);
    await expect(note).toContainText(reason);
    await expect(page.getByTestId('verdict')).toHaveAttribute('data-verdict', 'agree');
    console.log(`oracle ${kind}: run done in ${ms} ms`);
    expect(errors).toEqual([]);
    if (kind === 'gpu') await shoot(page.getByTestId('verdict'), testInfo, 'oracle-gpu-verdict');
  });
}
