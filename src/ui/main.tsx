// Entry point: one store, one engine worker, one controller; the embedded model is resolved against the
// document's base URL so the site works under any path.
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createController } from '../state/controller';
import { createAppStore } from '../state/store';
import { createEngineClient } from '../worker/client';
import { App } from './App';
import './styles.css';

export const EMBEDDED_MODEL_PATH = 'models/neox-kjv-bytes/';

const store = createAppStore();
const controller = createController(store, createEngineClient());
void controller.start(new URL(EMBEDDED_MODEL_PATH, document.baseURI).href);

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');
createRoot(root).render(
  <StrictMode>
    <App store={store} controller={controller} />
  </StrictMode>,
);
