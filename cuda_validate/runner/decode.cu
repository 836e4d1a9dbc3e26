// Flash-decoding and paged instantiations (extra_ops.hpp): X(d, block_kv, warps). Four warps
// of block_kv / 4 keys each; shared memory (16 + 4 block_kv) d 2 bytes = 68 KB at (128, 64)
// and 66 KB at (64, 128), so three CTAs fit an SM and keep ~100 KB of K/V in flight.
#include <sstream>

#include "extra_ops.hpp"

#define IOSIM_DECODE_INSTANCES(X) X(64, 128, 4) X(128, 64, 4)

namespace iosim_cuda {
namespace {

std::string decode_label(const char* name, int d, int block_kv, int warps, bool paged) {
  return std::string(name) + "<" + std::to_string(d) + ", " + std::to_string(block_kv) + ", " +
         std::to_string(warps) + ", " + (paged ? "true" : "false") + ">";
}

template <int kD, int kBKV, int kWarps, bool kPaged>
void decode_ops(const DecodeParams& p, std::vector<RoleOp>* ops, FlashTiling* tiling) {
  using Cfg = DecodeConfig<kD, kBKV, kWarps, kPaged>;
  auto* split_kernel = &decode_split_kernel<kD, kBKV, kWarps, kPaged>;
  const int smem = Cfg::smem_bytes(p.split_tokens, p.page_tokens);
  const dim3 grid(p.splits, p.kv_heads, p.batch);
  RoleOp split;
  kernel_role_op(p.splits == 1 ? "attention" : "split", split_kernel,
                 decode_label("decode_split_kernel", kD, kBKV, kWarps, kPaged), grid, Cfg::kThreads,
                 smem, &split, p);
  ops->push_back(split);
  if (p.splits > 1) ops->push_back(decode_reduce_role_op<kD>(p));
  *tiling = {Cfg::kThreads, smem, Cfg::kStages, "cp.async"};
}

}  // namespace

std::vector<std::array<int, 3>> decode_instances() {
  std::vector<std::array<int, 3>> v;
#define IOSIM_LIST(D, BKV, W) v.push_back({D, BKV, W});
  IOSIM_DECODE_INSTANCES(IOSIM_LIST)
#undef IOSIM_LIST
  return v;
}

bool make_decode_ops(int d, int block_kv, bool paged, const DecodeParams& p,
                     std::vector<RoleOp>* ops, FlashTiling* tiling, std::string* why) {
#define IOSIM_TRY(D, BKV, W)                        \
  if (d == D && block_kv == BKV) {                  \
    if (paged)                                      \
      decode_ops<D, BKV, W, true>(p, ops, tiling);  \
    else                                            \
      decode_ops<D, BKV, W, false>(p, ops, tiling); \
    return true;                                    \
  }
  IOSIM_DECODE_INSTANCES(IOSIM_TRY)
#undef IOSIM_TRY
  std::ostringstream msg;
  msg << (paged ? "paged" : "flash-decoding") << " has no instantiation for d=" << d
      << " block_kv=" << block_kv << "; compiled (d, block_kv):";
  for (const auto& i : decode_instances()) msg << " (" << i[0] << "," << i[1] << ")";
  *why = msg.str();
  return false;
}

}  // namespace iosim_cuda
