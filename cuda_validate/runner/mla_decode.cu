// Latent-KV (MLA) decode instantiations (extra_ops.hpp): X(d, dv, block_kv). Four warps; shared
// memory (16 + 2 block_kv) d 2 bytes + the P tile and row statistics: 164.8 KB at block_kv = 64
// (one CTA per SM), 91.8 KB at 32 (two). Its own translation unit so that it compiles beside
// decode.cu.
#include <sstream>

#include "extra_ops.hpp"

#define IOSIM_MLA_DECODE_INSTANCES(X) X(576, 512, 64) X(576, 512, 32)

namespace iosim_cuda {
namespace {

std::string mla_label(int d, int dv, int block_kv, bool paged) {
  return "mla_decode_split_kernel<" + std::to_string(d) + ", " + std::to_string(dv) + ", " +
         std::to_string(block_kv) + ", " + (paged ? "true" : "false") + ">";
}

template <int kD, int kDV, int kBKV, bool kPaged>
bool mla_ops(const DecodeParams& p, std::vector<RoleOp>* ops, FlashTiling* tiling,
             std::string* why) {
  using Cfg = MlaDecodeConfig<kD, kDV, kBKV, kPaged>;
  const int smem = Cfg::smem_bytes(p.split_tokens, p.page_tokens);
  if (smem > Cfg::kMaxSmemBytes) {
    // Only the paged table grows with the split: one int per page.
    *why = "the MLA split kernel needs " + std::to_string(smem) +
           " bytes of shared memory with this split's block table (at most " +
           std::to_string(Cfg::kMaxSmemBytes) + "): use more splits or larger pages";
    return false;
  }
  const int packed_rows = p.heads * p.seq;
  const dim3 grid(p.splits, (packed_rows + Cfg::kQRows - 1) / Cfg::kQRows, p.batch);
  RoleOp split;
  kernel_role_op(p.splits == 1 ? "attention" : "split",
                 &mla_decode_split_kernel<kD, kDV, kBKV, kPaged>, mla_label(kD, kDV, kBKV, kPaged),
                 grid, Cfg::kThreads, smem, &split, p);
  ops->push_back(split);
  if (p.splits > 1) ops->push_back(decode_reduce_role_op<kDV>(p));
  *tiling = {Cfg::kThreads, smem, Cfg::kStages, "cp.async"};
  return true;
}

}  // namespace

std::vector<std::array<int, 3>> mla_decode_instances() {
  std::vector<std::array<int, 3>> v;
#define IOSIM_LIST(D, DV, BKV) v.push_back({D, DV, BKV});
  IOSIM_MLA_DECODE_INSTANCES(IOSIM_LIST)
#undef IOSIM_LIST
  return v;
}

bool make_mla_decode_ops(int d, int dv, int block_kv, bool paged, const DecodeParams& p,
                         std::vector<RoleOp>* ops, FlashTiling* tiling, std::string* why) {
#define IOSIM_TRY(D, DV, BKV)                                     \
  if (d == D && dv == DV && block_kv == BKV)                      \
    return paged ? mla_ops<D, DV, BKV, true>(p, ops, tiling, why) \
                 : mla_ops<D, DV, BKV, false>(p, ops, tiling, why);
  IOSIM_MLA_DECODE_INSTANCES(IOSIM_TRY)
#undef IOSIM_TRY
  std::ostringstream msg;
  msg << (paged ? "paged" : "flash-decoding") << " with latent=" << dv
      << " has no instantiation for d=" << d << " block_kv=" << block_kv
      << "; compiled (d, latent, block_kv):";
  for (const auto& i : mla_decode_instances())
    msg << " (" << i[0] << "," << i[1] << "," << i[2] << ")";
  *why = msg.str();
  return false;
}

}  // namespace iosim_cuda
