// The runs mode's state without a page: files dropped together, and a message about the model that goes once
// another model is loaded (while a refusal of a file stays).
import { beforeEach, describe, expect, it } from 'vitest';
import type { EngineClient } from '../worker/client';
import { useRunsImport } from './runs-import';

const f = (name: string) => new File([new Uint8Array(16)], name);
const s = () => useRunsImport.getState();

/** A client whose analysis refuses with `err`. */
const refusing = (err: { kind: string; message: string }) =>
  ({
    compareRuns: () => Promise.reject(err),
    cancel: async () => {},
  }) as unknown as EngineClient;

beforeEach(() => {
  useRunsImport.setState({ picked: { A: null, B: null }, message: null, status: 'idle', modelKey: null });
});

describe('files dropped on a picker', () => {
  it('one file is that side; two are A and B in their order, said in a note; three are refused', () => {
    s().pickMany('B', [f('b.safetensors')]);
    expect(s().picked.B?.file.name).toBe('b.safetensors');
    expect(s().picked.A).toBeNull();
    s().pickMany('A', [f('one.safetensors'), f('two.safetensors')]);
    expect(s().picked.A?.file.name).toBe('one.safetensors');
    expect(s().picked.B?.file.name).toBe('two.safetensors');
    expect(s().message).toMatchObject({ at: 'A', note: true });
    expect(s().message?.text).toContain('one.safetensors is run A, two.safetensors is run B');
    s().pickMany('A', [f('x'), f('y'), f('z')]);
    expect(s().message).toMatchObject({
      at: 'A',
      text: 'Drop one or two run files, not 3: nothing was picked.',
    });
    expect(s().message?.note).toBeUndefined();
    expect(s().picked.A?.file.name).toBe('one.safetensors');
  });
});

describe('a message about the model', () => {
  it('goes when another model is loaded; a refused file stays', async () => {
    s().modelLoaded('embedded');
    s().pick('A', f('clean.safetensors'));
    await s().analyze(
      refusing({
        kind: 'model-mismatch',
        message:
          'run A (clean.safetensors) comes from another model (vocabulary 260, this one has 256): load theirs',
      }),
    );
    expect(s().message).toMatchObject({ at: 'analyze', aboutModel: true });
    s().modelLoaded('embedded');
    expect(s().message).not.toBeNull();
    s().modelLoaded('theirs');
    expect(s().message).toBeNull();

    await s().analyze(refusing({ kind: 'model', message: 'clean.safetensors: not a safetensors file' }));
    expect(s().message).toMatchObject({ at: 'A', aboutModel: false });
    s().modelLoaded('another');
    expect(s().message?.text).toBe('clean.safetensors: not a safetensors file');
  });
});

describe("the runs warm-up's state", () => {
  const status = (finished: number) => ({ state: 'done' as const, started: 1, finished, warmup: null });
  it('keeps the latest ask’s answer, and a worker closed in the middle leaves no warm-up running and no message', async () => {
    useRunsImport.setState({ warmup: null, warming: false, message: null });
    let answer: (v: unknown) => void = () => undefined;
    const slow = { warmRuns: () => new Promise((r) => (answer = r)) } as unknown as EngineClient;
    const first = s().warm(slow);
    expect(s().warming).toBe(true);
    const quick = { warmRuns: async () => status(1) } as unknown as EngineClient;
    await s().warm(quick);
    expect(s().warmup).toMatchObject({ finished: 1 });
    answer(status(0)); // the older ask's answer, late: not kept
    await first;
    expect(s().warmup).toMatchObject({ finished: 1 });
    expect(s().warming).toBe(false);
    const closed = {
      warmRuns: () => Promise.reject({ kind: 'internal', message: 'the engine worker was stopped' }),
    } as unknown as EngineClient;
    await s().warm(closed);
    expect(s().warming).toBe(false);
    expect(s().message).toBeNull();
  });
});
