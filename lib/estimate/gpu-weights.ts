import type { GgufFile } from '../file/gguf-file.js';
import type { GgufTensor } from '../file/tensor.js';
import type { ModelShape } from './model-shape.js';
import { alignUp, TENSOR_ALIGNMENT } from './weights.js';

/** llama.cpp's buffer type names with one CUDA device: the GPU, pinned host memory, plain host memory. */
export const GPU_BUFFERS = ['CUDA0', 'CUDA_Host', 'CPU'] as const;
export type GpuBufferName = (typeof GPU_BUFFERS)[number];

/** ggml-cuda's buffer alignment (ggml_backend_cuda_buffer_type_get_alignment). */
export const CUDA_ALIGNMENT = 128;
/** ggml-cuda's MATRIX_ROW_PADDING: a quantized tensor's buffer has room to pad its last row to it. */
const MATRIX_ROW_PADDING = 512;

/**
 * The bytes a tensor takes in a CUDA buffer (ggml_backend_cuda_buffer_type_get_alloc_size, then
 * the buffer's alignment): a quantized tensor whose rows are not a multiple of 512 gets one
 * row's padding, once per tensor ([TAG_ALLOC_SIZE_EXPAND]).
 */
export function cudaTensorBytes(nbytes: number, type: { readonly blockSize: number; readonly typeSize: number; readonly quantized: boolean }, rowLength: number): number {
  let size = nbytes;
  if (type.quantized && rowLength % MATRIX_ROW_PADDING !== 0) size += ((MATRIX_ROW_PADDING - (rowLength % MATRIX_ROW_PADDING)) / type.blockSize) * type.typeSize;
  return alignUp(size, CUDA_ALIGNMENT);
}

/**
 * Whether llama.cpp puts layer `il` (0..blocks-1; `blocks` is the output layer) on the GPU with
 * n_gpu_layers = gpuLayers: the last gpuLayers of the blocks and the output layer, the output
 * layer counting as one (llama_model::load_tensors' i_gpu_start = n_layer + 1 - n_gpu_layers).
 */
export function layerOnGpu(il: number, blocks: number, gpuLayers: number): boolean {
  return il >= blocks + 1 - gpuLayers;
}

/** Input-layer tensors: always on the host (llama.cpp never offloads the input layer). */
const INPUT_LAYER = /^((token_embd|position_embd|token_types|per_layer_token_embd)\.weight|hrm\.z_l_init)$/;
/**
 * Made for layer 0 alone, though named without a block (llama.cpp does the embeddings' norm on
 * the first layer); LFM2's tensor of that name is its output norm (LLM_TENSOR_OUTPUT_NORM_LFM2).
 */
const FIRST_LAYER = /^token_embd_norm\.(weight|bias)$/;
/**
 * Repeating-layer tensors without a block number in their name (rope_freqs and kin): every layer
 * asks for them, duplicated, so each buffer type holding a layer gets its own copy.
 */
const LAYER_ZERO = /^rope_(freqs|factors_long|factors_short)\.weight$/;

/** Which llama.cpp layer holds the tensor: a block, 'input', or the output layer (`blocks`). */
function layerOf(name: string, blocks: number, architecture: string): number | 'input' {
  const m = /^blk\.(\d+)\./.exec(name);
  if (m !== null) return Number(m[1]);
  if (INPUT_LAYER.test(name)) return 'input';
  if (FIRST_LAYER.test(name) && !architecture.startsWith('lfm2')) return 0;
  return blocks;
}

/** Architectures whose ssm_a feeds SSM_SCAN (the linear-attention ones multiply by theirs: SSM_A_NOSCAN). */
const SSM_SCAN_ARCHITECTURES = new Set(['mamba', 'mamba2', 'jamba', 'falcon-h1', 'granitehybrid', 'nemotron_h', 'nemotron_h_moe', 'plamo2']);

/**
 * Whether ggml-cuda runs the op llama.cpp tests the weight with (llama-model-loader's
 * weight_buft_supported). Every op of a weight is supported but the SSM ones, whose kernels take
 * only some sizes; a weight CUDA cannot run goes to the plain CPU buffer (the pinned host buffer
 * belongs to the CUDA device, so it is refused too).
 */
function cudaRunsWeight(tensor: GgufTensor, shape: ModelShape): boolean {
  if (SSM_SCAN_ARCHITECTURES.has(shape.architecture) && /\.ssm_a(\.weight)?$/.test(tensor.name)) {
    // the SSM_SCAN llama.cpp tests: A of one column (Mamba 2) takes the header's state size
    const [ne0 = 1, heads = 1] = tensor.shape;
    const state = ne0 === 1 ? shape.ssm.state : ne0;
    const headDim = shape.ssm.inner / heads;
    // Mamba 2's kernel: state 128 or 256, head size a multiple of 16
    if (ne0 === 1) return (state === 128 || state === 256) && headDim % 16 === 0;
    // Mamba 1's: state 16, head size 1, heads a multiple of 128, one group
    return state === 16 && headDim === 1 && heads % 128 === 0 && Math.max(1, shape.ssm.groups) === 1;
  }
  if (/\.(ssm_conv1d|shortconv\.conv)\.weight$/.test(tensor.name)) return (tensor.shape[1] ?? 0) % 128 === 0;
  return true;
}

export type GpuWeights = Readonly<Record<GpuBufferName, number>>;

/**
 * The model's buffers by buffer type with one CUDA device and n_gpu_layers = gpuLayers: a GPU
 * layer's weights in CUDA0 (CUDA's sizes), every other weight in pinned CUDA_Host memory (no
 * CPU repacking: the pinned buffer comes first in llama.cpp's host list), a weight CUDA cannot
 * run in CPU. `skip` leaves out tensors llama.cpp does not load (weights.ts decides which).
 */
export function estimateGpuWeights(file: GgufFile, shape: ModelShape, gpuLayers: number, skip: (tensor: GgufTensor) => boolean): GpuWeights {
  const blocks = shape.layerCount;
  const out: Record<GpuBufferName, number> = { CUDA0: 0, CUDA_Host: 0, CPU: 0 };
  const onGpu = (layer: number | 'input') => layer !== 'input' && layerOnGpu(layer, blocks, gpuLayers);
  const add = (tensor: GgufTensor, gpu: boolean) => {
    if (!cudaRunsWeight(tensor, shape)) out.CPU += alignUp(tensor.nbytes, TENSOR_ALIGNMENT);
    else if (gpu) out.CUDA0 += cudaTensorBytes(tensor.nbytes, tensor.ggmlType, tensor.shape[0] ?? 1);
    else out.CUDA_Host += alignUp(tensor.nbytes, TENSOR_ALIGNMENT);
  };
  const layersOnGpu = shape.layers.filter((l) => onGpu(l.index)).length;
  for (const tensor of file.tensors) {
    if (skip(tensor)) continue;
    if (LAYER_ZERO.test(tensor.name)) {
      if (layersOnGpu > 0) add(tensor, true);
      if (layersOnGpu < blocks) add(tensor, false);
      continue;
    }
    add(tensor, onGpu(layerOf(tensor.name, blocks, shape.architecture)));
  }
  // without output.weight the output layer multiplies by token_embd: a second copy when the
  // output layer's buffer type is not the input layer's (the GPU's)
  const embedding = file.tensor('token_embd.weight');
  if (embedding !== undefined && file.tensor('output.weight') === undefined && onGpu(blocks)) add(embedding, true);
  return out;
}
