// A sharded model in a RunSpec and its permalink: the model's sha256 (of the shard manifest) and every shard's
// sha256 travel together, round-trip through the link, and a link whose shards do not make its sha256 — or
// that names a shard badly — is refused with the field named.
import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import schema from '../../docs/report.schema.json';
import { manifestSha256 } from '../model/shard-index';
import { decodeLink, encodeLink } from './permalink';
import { defaultRunSpec, parseRunSpec, RunSpecError } from './runspec';

const files = {
  'model-00001-of-00002.safetensors': 'a'.repeat(64),
  'model-00002-of-00002.safetensors': 'b'.repeat(64),
};
const sha256 = manifestSha256(new Map(Object.entries(files)));
const url = 'https://huggingface.co/EleutherAI/pythia-6.9b/resolve/0123456789abcdef0123456789abcdef01234567/';

describe('sharded models in a RunSpec', () => {
  it('carry every shard sha256 through the permalink', () => {
    for (const model of [
      { kind: 'url' as const, url, sha256, files },
      { kind: 'file' as const, sha256, name: 'pythia-6.9b', files },
    ]) {
      const spec = { ...defaultRunSpec(), model };
      expect(parseRunSpec(spec)).toStrictEqual(spec);
      const back = decodeLink(encodeLink({ v: 1, spec }));
      expect(back.spec.model).toStrictEqual(model);
    }
  });

  it('are a model the report schema accepts, with their files', () => {
    const ajv = new Ajv2020({ allErrors: true, strict: true });
    ajv.addSchema(schema, 'report');
    const check = ajv.getSchema('report#/$defs/modelRef')!;
    for (const model of [
      { kind: 'url', url, sha256, files },
      { kind: 'file', sha256, name: 'x', files },
      { kind: 'url', url, sha256 },
    ])
      expect(check(model), JSON.stringify(check.errors)).toBe(true);
    expect(check({ kind: 'url', url, sha256, files: { '../x.safetensors': 'a'.repeat(64) } })).toBe(false);
    expect(check({ kind: 'url', url, sha256, files: { 'x.safetensors': 'nope' } })).toBe(false);
  });

  it("refuse shards that do not make the model's sha256, bad names, bad hashes", () => {
    const bad: [unknown, RegExp][] = [
      [{ ...files, 'model-00002-of-00002.safetensors': 'c'.repeat(64) }, /do not make the model's sha256/],
      [{ 'model-00001-of-00002.safetensors': 'a'.repeat(64) }, /do not make/],
      [{ '../x.safetensors': 'a'.repeat(64) }, /not a shard file name/],
      [{ 'x.bin': 'a'.repeat(64) }, /not a shard file name/],
      [{ 'x.safetensors': 'A'.repeat(64) }, /malformed/],
      [{}, /expected 1 to/],
      [['a'], /expected an object/],
    ];
    for (const [f, re] of bad) {
      const spec = { ...defaultRunSpec(), model: { kind: 'url', url, sha256, files: f } };
      expect(() => parseRunSpec(spec), JSON.stringify(f)).toThrow(RunSpecError);
      expect(() => parseRunSpec(spec), JSON.stringify(f)).toThrow(re);
    }
  });
});
