// The one list of compiled flash instantiations: X(d, block_q, block_kv, warps).
// Every tile fits the 227 KB of shared memory a Hopper CTA may opt into; the
// warp count keeps the fp32 accumulators of O and S (16 * kMT * (d + block_kv) / 32
// registers per thread... see README) under 255 registers without spills, which
// is why (128, 128, 128) uses 8 warps (16 rows each) instead of 4.
#pragma once

#define IOSIM_FLASH2_D64_INSTANCES(X) X(64, 64, 64, 4) X(64, 128, 64, 4) X(64, 128, 128, 8)
#define IOSIM_FLASH2_D128_INSTANCES(X) X(128, 64, 64, 4) X(128, 128, 64, 8) X(128, 128, 128, 8)
#define IOSIM_FLASH1_INSTANCES(X) X(64, 64, 64, 4) X(64, 128, 64, 4) X(128, 64, 64, 4)
