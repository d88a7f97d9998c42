// Checking a kernel written in the page before anything runs it: the compiler's messages
// (getCompilationInfo) at their line and column within the edited file, then the binding interface.
import { includesPrefix, kernelCode, type ShaderSource } from '../../gpu/pipelines';
import { checkCustomInterface } from './interface';
import { type CustomSlotId, customSlot, slotKernels } from './slots';

export interface KernelDiagnostic {
  severity: 'error' | 'warning' | 'info';
  /** 1-based line and column in the edited file. */
  line: number;
  column: number;
  /** Character range in the edited file (to >= from). */
  from: number;
  to: number;
  message: string;
}

export interface KernelCheck {
  /** Compiler messages; errors first. */
  diagnostics: KernelDiagnostic[];
  /** Binding-interface mismatches (only looked for once the source compiles). */
  problems: string[];
  /** True when the source compiles and presents the slot's interface: it may run. */
  ok: boolean;
  /** Wall time of the check, milliseconds. */
  ms: number;
}

/** 1-based line and column of a character offset in `text`. */
export function lineCol(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      start = i + 1;
    }
  }
  return { line, column: Math.max(0, offset - start) + 1 };
}

/** Maps compiler messages on the whole module (includes + file) into the edited file. */
export function mapMessages(
  messages: readonly Pick<GPUCompilationMessage, 'type' | 'message' | 'offset' | 'length'>[],
  prefix: string,
  source: string,
): KernelDiagnostic[] {
  const out = messages.map((m): KernelDiagnostic => {
    const severity = m.type === 'error' ? 'error' : m.type === 'warning' ? 'warning' : 'info';
    const at = m.offset - prefix.length;
    if (at < 0) {
      // Reported inside a shipped include: usually a name the edited file removed or redefined.
      const p = lineCol(prefix, m.offset);
      return {
        severity,
        line: 1,
        column: 1,
        from: 0,
        to: 0,
        message: `in an included file (line ${p.line} of the includes): ${m.message}`,
      };
    }
    const from = Math.min(at, source.length);
    const to = Math.min(source.length, from + Math.max(0, m.length));
    return { severity, ...lineCol(source, from), from, to, message: m.message };
  });
  const rank = { error: 0, warning: 1, info: 2 };
  return out.sort((a, b) => rank[a.severity] - rank[b.severity] || a.from - b.from);
}

/** Compiles the slot's kernel with `source` as its file on `device` and checks its interface. */
export async function checkCustomKernel(
  device: GPUDevice,
  slotId: CustomSlotId,
  source: string,
  shaders: ShaderSource,
): Promise<KernelCheck> {
  const t0 = performance.now();
  const slot = customSlot(slotId);
  const withSource: ShaderSource = (f) => (f === slot.kernel.file ? source : shaders(f));
  // Every kernel built from the file (the GEMM epilogues also compile as split-K partial and reduction): the
  // slot's own kernel's messages are shown; another's errors only once the slot's own compiles.
  let diagnostics: KernelDiagnostic[] = [];
  for (const [n, kernel] of slotKernels(slot).entries()) {
    device.pushErrorScope('validation');
    const mod = device.createShaderModule({
      label: `custom/${kernel.name}`,
      code: kernelCode(kernel, withSource),
    });
    const info = await mod.getCompilationInfo();
    await device.popErrorScope(); // the messages below say it all
    const found = mapMessages(info.messages, includesPrefix(kernel, shaders), source);
    if (n === 0) diagnostics = found;
    else
      diagnostics.push(
        ...found
          .filter((d) => d.severity === 'error')
          .map((d) => ({ ...d, message: `${d.message} (when compiled as ${kernel.name})` })),
      );
    if (diagnostics.some((d) => d.severity === 'error')) break;
  }
  const compiles = !diagnostics.some((d) => d.severity === 'error');
  const problems = compiles ? checkCustomInterface(slotId, source, shaders) : [];
  return { diagnostics, problems, ok: compiles && problems.length === 0, ms: performance.now() - t0 };
}
