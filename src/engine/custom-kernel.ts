// A custom kernel in a run: checked (compiles, presents the slot's interface) before the engine uses it, then
// installed for the fused path of that run only.
import { checkCustomKernel } from '../kernels/custom/check';
import { type CustomSlotId, customSlot } from '../kernels/custom/slots';
import { InputError } from '../model/errors';
import type { Engine } from './engine';

/**
 * Checks `custom` and installs it in `engine`; returns the function that puts the shipped kernel back.
 * A source that does not compile or whose bindings differ is refused (InputError) naming the first line or
 * binding at fault, before any GPU work of the run.
 */
export async function installCustomKernel(
  engine: Engine,
  custom: { slot: CustomSlotId; source: string } | undefined,
): Promise<() => void> {
  engine.setCustomKernel(null);
  if (!custom) return () => undefined;
  const slot = customSlot(custom.slot);
  const check = await checkCustomKernel(engine.ctx.device, custom.slot, custom.source, engine.shaderSource);
  const err = check.diagnostics.find((d) => d.severity === 'error');
  if (err)
    throw new InputError(
      `the custom ${slot.id} kernel does not compile: line ${err.line}, column ${err.column}: ${err.message}`,
    );
  if (check.problems.length)
    throw new InputError(`the custom ${slot.id} kernel does not fit its slot: ${check.problems[0]}`);
  engine.setCustomKernel({ file: slot.kernel.file, source: custom.source });
  return () => engine.setCustomKernel(null);
}
