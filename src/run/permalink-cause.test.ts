// The sharer's cause in a permalink: it travels with the summary, round-trips, and a malformed one is refused with
// one clear sentence (bounded strings, a plain id, one line of words, no other keys).
import { describe, expect, it } from 'vitest';
import { sameCause } from '../state/sharer';
import { LinkError } from './link-bytes';
import {
  decodeLink,
  encodeLink,
  LINK_LIMITS,
  type LinkPayload,
  parseLinkPayload,
  sharerSummary,
} from './permalink';
import { defaultRunSpec } from './runspec';

const report = { metric: 'relL2' as const, layers: [{ ratio: 0.5 }, { ratio: 4e4 }], firstDivergentLayer: 1 };

function withCause(cause: unknown): unknown {
  return {
    v: 1,
    spec: defaultRunSpec(),
    sharer: { adapter: 'a', summary: { ...sharerSummary(report), cause } },
  };
}

function refusal(v: unknown): string {
  try {
    parseLinkPayload(v);
  } catch (e) {
    expect(e).toBeInstanceOf(LinkError);
    expect((e as LinkError).reason).toBe('sharer');
    return (e as Error).message;
  }
  throw new Error('accepted');
}

describe('the sharer’s cause in a link', () => {
  it('travels in the summary and round-trips; older links without it still read', () => {
    const cause = { id: 'act-relu', words: 'the activation is ReLU instead of GELU' };
    const s = sharerSummary(report, cause);
    expect(s.cause).toEqual(cause);
    const p: LinkPayload = { v: 1, spec: defaultRunSpec(), sharer: { adapter: 'gpu', summary: s } };
    const back = decodeLink(encodeLink(p));
    expect(back.sharer?.summary.cause).toEqual(cause);
    expect(
      decodeLink(encodeLink({ ...p, sharer: { adapter: 'gpu', summary: sharerSummary(report, null) } }))
        .sharer?.summary.cause,
    ).toBeNull();
    const old = decodeLink(encodeLink({ ...p, sharer: { adapter: 'gpu', summary: sharerSummary(report) } }));
    expect(old.sharer?.summary).not.toHaveProperty('cause');
  });

  it('refuses a malformed cause with one sentence naming the field', () => {
    expect(refusal(withCause('relu'))).toMatch(/summary\.cause is not null or an object/);
    expect(refusal(withCause({ id: 'relu' }))).toMatch(/summary\.cause\.words/);
    expect(refusal(withCause({ id: 'Has Spaces', words: 'w' }))).toMatch(/summary\.cause\.id/);
    expect(refusal(withCause({ id: 'x'.repeat(LINK_LIMITS.causeIdChars + 1), words: 'w' }))).toMatch(
      /summary\.cause\.id/,
    );
    expect(refusal(withCause({ id: 'a', words: 'w'.repeat(LINK_LIMITS.causeWordsChars + 1) }))).toMatch(
      /summary\.cause\.words is not one line of at most 200 characters/,
    );
    expect(refusal(withCause({ id: 'a', words: 'two\nlines' }))).toMatch(/summary\.cause\.words/);
    expect(refusal(withCause({ id: 'a', words: 'w', extra: 1 }))).toMatch(/unknown key "extra"/);
    for (const m of [refusal(withCause(42)), refusal(withCause({ id: 'a', words: 5 }))])
      expect(m.split('. ').length).toBe(1);
  });
});

describe('the sharer’s cause beside the viewer’s', () => {
  it('is the same by id, none on both the same, unknown when either side has not said', () => {
    const relu = { id: 'act-relu', words: 'ReLU' };
    expect(sameCause(relu, { id: 'act-relu' })).toBe(true);
    expect(sameCause(relu, { id: 'act-silu' })).toBe(false);
    expect(sameCause(relu, null)).toBe(false);
    expect(sameCause(null, null)).toBe(true);
    expect(sameCause(undefined, { id: 'act-relu' })).toBeNull();
    expect(sameCause(relu, undefined)).toBeNull();
  });
});
