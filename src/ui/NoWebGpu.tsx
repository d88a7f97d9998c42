// Shown instead of the app when the browser has no WebGPU (navigator.gpu missing or no adapter).

export function NoWebGpu({ detail }: { detail: string | null }) {
  return (
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
          <strong>Chrome or Edge 113 or later on Windows, macOS or ChromeOS:</strong> WebGPU is on by default.
          Update the browser if it is older, and make sure hardware acceleration is on (Settings → System).
        </li>
        <li>
          <strong>Chrome on Linux:</strong> open <code>chrome://flags/#enable-unsafe-webgpu</code> and enable{' '}
          <em>Unsafe WebGPU Support</em>, enable Vulkan (<code>chrome://flags/#enable-vulkan</code>), then
          relaunch the browser.
        </li>
        <li>
          <strong>Check:</strong> <code>chrome://gpu</code> should list <em>WebGPU: Hardware accelerated</em>.
          If it says disabled or blocklisted, your GPU driver may need an update.
        </li>
      </ul>
      <p>Then reload this page.</p>
    </section>
  );
}
