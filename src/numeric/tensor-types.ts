// A CPU tensor and a linear's weights: the leaf both families' weight types are written in (numeric/types.ts,
// numeric/llama-types.ts).

/** A dense row-major fp32 tensor (CPU side). */
export interface Tensor {
  shape: number[];
  data: Float32Array;
}

export interface LinearWeights {
  weight: Tensor; // [out, in] (PyTorch nn.Linear layout)
  bias: Tensor | null; // [out]
}
