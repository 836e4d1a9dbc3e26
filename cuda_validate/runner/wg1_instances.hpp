// The compiled instantiations of the wg1 kernels: X(dtype, d, block_q, block_kv, stages), one
// per (dtype, d, block_q, block_kv, stages) that suites/wg1_fwd.txt (and suites/wg1_check.txt)
// run. Shared memory (dynamic bytes a CTA asks for):
//   wg1_tma_fwd: 1024 + (block_q + 2 stages block_kv) d 2  (1024: swizzle-atom alignment slack)
//   wg1_mma_fwd: (block_q + 2 stages block_kv) d 2
// both at most the 227 KB a Hopper CTA may opt into. Registers: ptxas must not spill (the build
// has -warn-spills as an error), which rules out wg1_tma_fwd's block_q = 128 with
// d + block_kv > 192, and wg1_mma_fwd's (d 128, 64 x 128) and (d 128, 128 x 64) (both spill at
// 255 registers with 4 warps; flash2 runs those tiles with 8 warps).
#pragma once

#define IOSIM_WG1_TMA_INSTANCES(X) \
  X(bf16, 64, 64, 64, 2) \
  X(bf16, 64, 64, 128, 6) \
  X(bf16, 64, 128, 64, 3) \
  X(bf16, 64, 128, 128, 2) \
  X(bf16, 128, 64, 64, 4) \
  X(bf16, 128, 64, 128, 3) \
  X(bf16, 128, 128, 64, 2) \
  X(bf16, 128, 128, 64, 5) \
  X(fp16, 64, 64, 64, 6) \
  X(fp16, 64, 64, 128, 4) \
  X(fp16, 64, 128, 64, 2) \
  X(fp16, 64, 128, 128, 3) \
  X(fp16, 128, 64, 64, 5) \
  X(fp16, 128, 64, 128, 2) \
  X(fp16, 128, 128, 64, 3) \
  X(fp16, 128, 128, 64, 4)

#define IOSIM_WG1_MMA_INSTANCES(X) \
  X(bf16, 64, 64, 128, 6) \
  X(bf16, 64, 128, 64, 2) \
  X(bf16, 128, 64, 64, 3) \
  X(bf16, 128, 64, 64, 6) \
  X(fp16, 64, 64, 64, 3) \
  X(fp16, 64, 64, 128, 3) \
  X(fp16, 64, 128, 64, 4) \
  X(fp16, 128, 64, 64, 5)
