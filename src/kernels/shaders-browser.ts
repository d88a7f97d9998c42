// The browser's ShaderSource: every WGSL file under shaders/ bundled as a string by Vite.
import type { ShaderSource } from '../gpu/pipelines';

const files = import.meta.glob('../../shaders/**/*.wgsl', {
  query: '?raw',
  import: 'default',
  eager: true,
}) as Record<string, string>;

export const browserShaderSource: ShaderSource = (file) => {
  const text = files[`../../shaders/${file}`];
  if (text === undefined) throw new Error(`shader not bundled: ${file}`);
  return text;
};
