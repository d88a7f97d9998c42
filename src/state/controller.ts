// The effects behind the store's actions: start the worker's engine, load the embedded model, run and
// cancel generations. The only module that talks to the EngineClient.
import { asWorkerError, type EngineClient } from '../worker/client';
import { type AppStore, canGenerate } from './store';

export interface Controller {
  /** Initialises WebGPU in the worker, then loads the model under modelUrl (absolute, ending in '/'). */
  start(modelUrl: string): Promise<void>;
  /** Runs the store's prompt and n; does nothing when a run cannot start now. */
  generate(): Promise<void>;
  cancel(): void;
  dispose(): void;
}

export function createController(store: AppStore, client: EngineClient): Controller {
  const s = () => store.getState();

  async function loadModel(modelUrl: string): Promise<void> {
    s().modelLoadStarted();
    try {
      const info = await client.loadModelFromUrl(modelUrl, (p) => s().setModelProgress(p));
      s().modelLoaded(info);
    } catch (e) {
      s().modelFailed(asWorkerError(e));
    }
  }

  return {
    async start(modelUrl) {
      s().initStarted();
      const r = await client.init();
      if (!r.ok) {
        s().initFailed(r.error);
        // Nothing can run without a device: free the worker.
        if (r.error.kind === 'no-webgpu') client.terminate();
        return;
      }
      s().initSucceeded(r.adapter, r.features);
      await loadModel(modelUrl);
    },

    async generate() {
      if (!canGenerate(s())) return;
      s().runStarted();
      const { prompt, n } = s().run;
      try {
        const r = await client.generate(prompt, n, (ev) => s().tokenArrived(ev.id, ev.text));
        s().runFinished(r);
      } catch (e) {
        s().runFailed(asWorkerError(e));
      }
    },

    cancel() {
      if (s().run.status === 'running') void client.cancel();
    },

    dispose() {
      client.terminate();
    },
  };
}
