import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// base './' keeps the built site working under any sub-path of a static host.
export default defineConfig({
  base: './',
  plugins: [react()],
  worker: { format: 'es' },
  build: { target: 'es2022', outDir: 'dist' },
  server: { port: 5173, strictPort: false },
  preview: { port: 4173, strictPort: true },
});
