// The loaded model (its family shown) and where to load another from: the Pythia and Llama-family presets on the
// Hugging Face Hub, the embedded
// default, files from disk (picker or drag-and-drop of config.json + model.safetensors or its index and shards
// [+ tokenizer.json]) or
// a URL of a folder holding them. A download shows its progress and can be cancelled (the model before stays).
import { type DragEvent, type FormEvent, useId, useState } from 'react';
import { useStore } from 'zustand';
import type { Controller } from '../state/controller';
import type { AppStore } from '../state/store';
import { ErrorAlert } from './ErrorAlert';
import { formatBytes, formatCount } from './format';
import { HubPresets } from './HubPresets';

export function ModelPanel({ store, controller }: { store: AppStore; controller: Controller }) {
  const status = useStore(store, (s) => s.modelStatus);
  const model = useStore(store, (s) => s.model);
  const source = useStore(store, (s) => s.modelSource);
  const progress = useStore(store, (s) => s.modelProgress);
  const initStatus = useStore(store, (s) => s.initStatus);
  const running = useStore(store, (s) => s.run.status === 'running');
  const ids = useId();
  const [url, setUrl] = useState('');
  const [over, setOver] = useState(false);
  const cfg = model?.config;
  const canLoad = initStatus === 'ready' && status !== 'loading' && !running;

  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setOver(false);
    if (!canLoad) return;
    const files = Array.from(e.dataTransfer.files);
    if (files.length) void controller.loadFromFiles(files);
  };
  const onUrl = (e: FormEvent) => {
    e.preventDefault();
    if (url.trim() && canLoad) void controller.loadFromUrl(url);
  };

  return (
    <section className="card" data-testid="model-panel" data-status={status} aria-labelledby={`${ids}-title`}>
      <h2 id={`${ids}-title`}>Model</h2>
      {status === 'idle' && (
        <p className="muted">
          {initStatus === 'lost'
            ? 'The GPU was lost: restart it (above) to load the model again.'
            : 'Waiting for the GPU…'}
        </p>
      )}
      {status === 'loading' && (
        <div className="load">
          <label htmlFor={`${ids}-progress`}>
            {progress?.file === 'gpu'
              ? 'Uploading weights to the GPU…'
              : progress?.file
                ? `Downloading ${progress.file}…`
                : 'Loading the model…'}
          </label>
          <progress
            id={`${ids}-progress`}
            max={progress?.totalBytes ?? undefined}
            value={progress?.totalBytes ? progress.loadedBytes : undefined}
          />
          <span className="muted small" data-testid="load-bytes">
            {formatBytes(progress?.loadedBytes ?? 0)}
            {progress?.totalBytes ? ` / ${formatBytes(progress.totalBytes)}` : ''}
          </span>
          {source?.kind === 'url' && progress?.file !== 'gpu' && (
            <button
              type="button"
              className="small-btn"
              data-testid="cancel-load"
              onClick={() => controller.cancelModelLoad()}
            >
              Cancel
            </button>
          )}
        </div>
      )}
      {status === 'error' && <p className="muted">No model is loaded.</p>}
      {model && cfg && (
        <dl className="facts">
          <dt>Name</dt>
          <dd data-testid="model-name">{model.name}</dd>
          <dt>From</dt>
          <dd data-testid="model-source" data-kind={source?.kind ?? ''}>
            {source?.kind === 'embedded'
              ? 'embedded with this site'
              : source?.kind === 'url'
                ? source.url
                : source?.kind === 'files'
                  ? 'files from your disk'
                  : '—'}
          </dd>
          <dt>Family</dt>
          <dd data-testid="model-family" data-family={model.family ?? 'gpt_neox'}>
            {model.family === 'llama' ? `Llama family (${model.flavour})` : 'GPT-NeoX'}
          </dd>
          <dt>Layers</dt>
          <dd data-testid="model-layers">{cfg.numLayers}</dd>
          <dt>Hidden size d</dt>
          <dd>{cfg.hiddenSize}</dd>
          <dt>Heads</dt>
          <dd>{cfg.numHeads}</dd>
          <dt>Vocabulary</dt>
          <dd>{cfg.vocabSize}</dd>
          <dt>Parameters</dt>
          <dd>{formatCount(model.params)}</dd>
          <dt>Tokenizer</dt>
          <dd>{model.tokenizer}</dd>
          <dt>On the GPU</dt>
          <dd>{formatBytes(model.gpuBytes)}</dd>
          <dt>Weights on the GPU</dt>
          <dd data-testid="weights-precision">{model.weightsOnGpu}</dd>
          <dt>sha256</dt>
          <dd className="mono small" data-testid="model-sha256" title={model.sha256}>
            {model.sha256}
          </dd>
          {model.files && (
            <>
              <dt>Shards</dt>
              <dd data-testid="model-shards">
                {Object.keys(model.files).length} (the sha256 above is that of their sha256 list)
              </dd>
            </>
          )}
        </dl>
      )}
      <HubPresets store={store} controller={controller} />
      <ErrorAlert store={store} controller={controller} place="model" />
      <details className="loader">
        <summary>Load another model</summary>
        <div className="loader-body">
          {status === 'ready' && model && (source?.kind === 'files' || source?.kind === 'url') && (
            // Said where the files were picked too: the panel's facts above may be scrolled out of view.
            <p className="ok-line small" role="status" data-testid="loader-status">
              Loaded {model.name}: {model.family === 'llama' ? `Llama family (${model.flavour})` : 'GPT-NeoX'}
              , {model.config.numLayers} layers.
            </p>
          )}
          <button
            type="button"
            onClick={() => void controller.loadEmbedded()}
            disabled={!canLoad}
            data-testid="load-embedded"
          >
            Embedded model (neox-kjv-bytes)
          </button>
          <label
            className={`dropzone${over ? ' over' : ''}`}
            data-testid="dropzone"
            onDragOver={(e) => {
              e.preventDefault();
              setOver(true);
            }}
            onDragLeave={() => setOver(false)}
            onDrop={onDrop}
          >
            <span>
              <strong>From your disk:</strong> choose or drop <code>config.json</code> +{' '}
              <code>model.safetensors</code> (or <code>model.safetensors.index.json</code> and its shards) (+{' '}
              <code>tokenizer.json</code>)
            </span>
            <input
              type="file"
              multiple
              accept=".json,.safetensors"
              data-testid="model-files"
              disabled={!canLoad}
              onChange={(e) => {
                const files = Array.from(e.target.files ?? []);
                e.target.value = '';
                if (files.length) void controller.loadFromFiles(files);
              }}
            />
          </label>
          <form className="url-form" onSubmit={onUrl}>
            <label htmlFor={`${ids}-url`}>From a URL (a folder with these files)</label>
            <div className="inline">
              <input
                id={`${ids}-url`}
                type="text"
                inputMode="url"
                placeholder="https://example.org/models/my-neox/"
                value={url}
                data-testid="model-url"
                onChange={(e) => setUrl(e.target.value)}
              />
              <button type="submit" disabled={!canLoad || !url.trim()} data-testid="load-url">
                Load
              </button>
            </div>
          </form>
          <p className="muted small">
            GPT-NeoX and Llama-family (Llama, Qwen2, Qwen3, Mistral) checkpoints in Hugging Face format (fp32,
            fp16 or bf16 safetensors). Files stay on this machine.
          </p>
        </div>
      </details>
    </section>
  );
}
