// Shown instead of the app when the browser has no WebGPU (navigator.gpu missing or no adapter). A link
// opened here still says what it carries, read-only: a scenario's story, steps and expectation, the run's
// settings, and the sharer's per-layer result (their ratios to the noise floor); then how to turn WebGPU on.
import { useStore } from 'zustand';
import { scenarioRun } from '../state/scenario';
import type { AppStore } from '../state/store';
import { formatRatio } from './format';
import { describeSpec, firstLayerWords } from './spec-words';

/** What the opened link carries, for reading only (nothing can run here). */
function LinkReadOnly({ store }: { store: AppStore }) {
  const linked = useStore(store, (s) => s.linked);
  const view = useStore(store, (s) => s.scenario);
  if (!linked) return null;
  const sr = view ? scenarioRun(view.id, view.variant) : null;
  const sharer = linked.sharer;
  const k = linked.spec.k;
  return (
    <section className="card link-readonly" data-testid="link-readonly" aria-labelledby="link-readonly-title">
      <h2 id="link-readonly-title">
        {sr ? `Scenario: ${sr.scenario.title}` : 'The run this link describes'}{' '}
        <span className="pill">read-only</span>
      </h2>
      {sr && (
        <div data-testid="readonly-scenario" data-id={sr.scenario.id}>
          <p data-testid="readonly-story">{sr.scenario.story}</p>
          <ol className="steps">
            {sr.scenario.steps.map((t, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: a step's position is its identity
              <li key={i}>{t}</li>
            ))}
          </ol>
          <p>
            <strong>Expected:</strong> {firstLayerWords(sr.expect.firstDivergentLayer)}
            {sr.expect.kernel ? `; bisection blames ${sr.expect.kernel}` : ''}. {sr.expect.note}
          </p>
        </div>
      )}
      <dl className="facts">
        {describeSpec(linked.spec).map((l) => (
          <div key={l.label} className="fact">
            <dt>{l.label}</dt>
            <dd>{l.value}</dd>
          </div>
        ))}
      </dl>
      {sharer && (
        <div data-testid="readonly-sharer">
          <h3>What the sharer saw</h3>
          <p>
            On <span className="mono">{sharer.adapter}</span>:{' '}
            {firstLayerWords(sharer.summary.firstDivergentLayer)} (error ÷ noise floor per layer,{' '}
            {sharer.summary.metric}; diverged above ×{k}).
          </p>
          <table className="sharer-table">
            <thead>
              <tr>
                <th scope="col">Layer</th>
                <th scope="col">Error ÷ floor</th>
                <th scope="col">Diverged</th>
              </tr>
            </thead>
            <tbody>
              {sharer.summary.ratios.map((r, i) => (
                <tr
                  // biome-ignore lint/suspicious/noArrayIndexKey: the layer number is the row's identity
                  key={i}
                  data-testid="readonly-sharer-row"
                  data-layer={i}
                >
                  <td>{i}</td>
                  <td>{r === null ? 'not finite' : formatRatio(r)}</td>
                  <td>{r === null || r > k ? 'yes' : 'no'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p className="muted small">
        Nothing can run in this browser: with WebGPU on (below), reload and this link runs here.
      </p>
    </section>
  );
}

export function NoWebGpu({ detail, store }: { detail: string | null; store: AppStore }) {
  return (
    <>
      <LinkReadOnly store={store} />
      <section className="card no-webgpu" data-testid="no-webgpu" aria-labelledby="no-webgpu-title">
        <h2 id="no-webgpu-title">This browser cannot run the model: WebGPU is not available</h2>
        <p>
          The divergence explorer runs a language model on your GPU with <strong>WebGPU</strong>. This browser
          did not give it a GPU to use, so nothing can run here.
        </p>
        {detail && (
          <p className="detail">
            What the browser said: <span>{detail}</span>
          </p>
        )}
        <h3>How to turn WebGPU on</h3>
        <ul>
          <li>
            <strong>Chrome or Edge 113 or later on Windows, macOS or ChromeOS:</strong> WebGPU is on by
            default. Update the browser if it is older, and make sure hardware acceleration is on (Settings →
            System).
          </li>
          <li>
            <strong>Chrome on Linux:</strong> open <code>chrome://flags/#enable-unsafe-webgpu</code> and
            enable <em>Unsafe WebGPU Support</em>, enable Vulkan (<code>chrome://flags/#enable-vulkan</code>),
            then relaunch the browser.
          </li>
          <li>
            <strong>Check:</strong> <code>chrome://gpu</code> should list{' '}
            <em>WebGPU: Hardware accelerated</em>. If it says disabled or blocklisted, your GPU driver may
            need an update.
          </li>
        </ul>
        <p>Then reload this page.</p>
      </section>
    </>
  );
}
