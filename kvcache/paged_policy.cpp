#include "kvcache/paged_policy.hpp"

#include "sim/base/errors.hpp"

namespace iosim::kvcache::detail {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

PagedPolicy::PagedPolicy(const CacheConfig& c, Sequences& seqs)
    : seqs_(seqs),
      bpt_(c.model.bytes_per_token()),
      b_(static_cast<std::int32_t>(c.block_tokens)),
      blocks_(c.budget_bytes / (bpt_ * b_)),
      watermark_blocks_(static_cast<std::int64_t>(c.watermark * static_cast<double>(blocks_))),
      pool_(blocks_, b_),
      block_group_(static_cast<std::size_t>(blocks_), -1),
      block_prefix_index_(static_cast<std::size_t>(blocks_), -1) {}

// The most a request can ever hold alone: the prompt's blocks plus, per sample, blocks for the
// tail of the prompt's last block and its output (one sample keeps the original last block).
bool PagedPolicy::fits_alone(std::int32_t r) const {
  const std::int64_t p = seqs_.stream().requests[static_cast<std::size_t>(r)].prompt_tokens;
  const std::int64_t tail = p % b_;
  std::int64_t peak = ceil_div(p, b_) - (tail > 0 ? 1 : 0);
  for (std::size_t k = 0; k < seqs_.samples(); ++k) {
    peak += ceil_div(tail + seqs_.output_of(r, k), b_);
  }
  return peak <= blocks_ - watermark_blocks_;
}

std::optional<Admitted> PagedPolicy::admit(std::int32_t r) {
  const RequestStream& s = seqs_.stream();
  const Request& q = s.requests[static_cast<std::size_t>(r)];
  const std::int32_t p = q.prompt_tokens;
  const auto nb = static_cast<std::size_t>(ceil_div(p, b_));
  const std::size_t shared =
      s.shared_prefix_tokens > 0
          ? static_cast<std::size_t>(std::min<std::int64_t>(s.shared_prefix_tokens, p) / b_)
          : 0;
  std::vector<std::int32_t>* group_prefix = nullptr;
  std::size_t reused = 0;
  if (shared > 0) {
    group_prefix = &prefix_[q.group];
    reused = std::min(shared, group_prefix->size());
  }
  const auto drop_empty_prefix = [&] {
    const auto it = prefix_.find(q.group);
    if (it != prefix_.end() && it->second.empty()) prefix_.erase(it);
  };
  if (pool_.free_count() - static_cast<std::int64_t>(nb - reused) < watermark_blocks_) {
    drop_empty_prefix();
    return std::nullopt;
  }
  // The prompt's blocks, each held by one temporary reference while the tables are built.
  prompt_table_.clear();
  bool ok = true;
  for (std::size_t j = 0; j < nb; ++j) {
    std::int32_t blk;
    if (j < reused) {
      blk = (*group_prefix)[j];
      pool_.add_ref(blk);
    } else {
      blk = pool_.allocate();
      if (blk < 0) {
        ok = false;
        break;
      }
      const auto start = static_cast<std::int32_t>(j) * b_;
      pool_.add_tokens(blk, std::min(b_, p - start));
      if (j < shared) {
        block_group_[static_cast<std::size_t>(blk)] = q.group;
        block_prefix_index_[static_cast<std::size_t>(blk)] = static_cast<std::int32_t>(j);
        group_prefix->push_back(blk);
      }
    }
    prompt_table_.push_back(blk);
  }
  created_.clear();
  std::int64_t regenerated = 0;
  if (ok) {
    for (std::size_t k = 0; k < seqs_.samples(); ++k) {
      if (seqs_.generated(r, k) >= seqs_.output_of(r, k)) continue;
      const std::int32_t slot = seqs_.create(r, k, p);
      Seq& sq = seqs_[slot];
      sq.table = prompt_table_;
      sq.last_blk = prompt_table_.back();
      for (std::int32_t blk : prompt_table_) pool_.add_ref(blk);
      logical_blocks_ += static_cast<std::int64_t>(nb);
      created_.push_back(slot);
    }
    // A readmitted request recomputes the tokens its samples had generated, in free blocks only:
    // admission never preempts.
    auto no_room = [] { return false; };
    for (std::int32_t slot : created_) {
      Seq& sq = seqs_[slot];
      const std::int32_t g = seqs_.generated(r, static_cast<std::size_t>(sq.sample));
      regenerated += g;
      for (std::int32_t i = 0; ok && i < g; ++i) ok = append_token(sq, Mode::replay, no_room);
      if (!ok) break;
    }
  }
  for (auto it = prompt_table_.rbegin(); it != prompt_table_.rend(); ++it) release_block(*it);
  if (ok && pool_.free_count() < watermark_blocks_) ok = false;
  if (!ok) {
    for (std::int32_t slot : created_) free(slot);
    drop_empty_prefix();
    return std::nullopt;
  }
  return Admitted{static_cast<std::int32_t>(created_.size()), p + regenerated};
}

void PagedPolicy::release_block(std::int32_t blk) {
  if (!pool_.release(blk)) return;
  std::int32_t& g = block_group_[static_cast<std::size_t>(blk)];
  if (g < 0) return;
  // Every table listing a later prefix block also lists this one, so when this one is freed
  // the later ones already are: the group's resident prefix ends here.
  std::vector<std::int32_t>& p = prefix_[g];
  const auto idx = static_cast<std::size_t>(block_prefix_index_[static_cast<std::size_t>(blk)]);
  if (p.size() > idx) p.resize(idx);
  if (p.empty()) prefix_.erase(g);
  g = -1;
  block_prefix_index_[static_cast<std::size_t>(blk)] = -1;
}

void PagedPolicy::free(std::int32_t slot) {
  Seq& q = seqs_[slot];
  for (auto it = q.table.rbegin(); it != q.table.rend(); ++it) release_block(*it);
  logical_blocks_ -= static_cast<std::int64_t>(q.table.size());
  q.table.clear();
  seqs_.release(slot);
}

void PagedPolicy::count_bytes(StepTotals& st) const {
  st.reserved_bytes = static_cast<double>(pool_.used_count() * b_ * bpt_);
  st.token_bytes = static_cast<double>(pool_.filled_tokens() * bpt_);
  st.saved_by_sharing_bytes =
      static_cast<double>((logical_blocks_ - pool_.used_count()) * b_ * bpt_);
}

void PagedPolicy::audit() const {
  const RequestStream& s = seqs_.stream();
  const std::vector<Seq>& seqs = seqs_.slots();
  const auto nblocks = static_cast<std::size_t>(blocks_);
  std::vector<std::int32_t> refs(nblocks, 0);
  std::vector<std::int32_t> owner(nblocks, -1);  // first request seen referencing the block
  std::vector<std::int64_t> stamp(nblocks, -1);  // last slot whose table listed it
  std::int64_t logical = 0;
  for (std::size_t slot = 0; slot < seqs.size(); ++slot) {
    const Seq& q = seqs[slot];
    if (q.request < 0) continue;
    ensure(static_cast<std::int64_t>(q.table.size()) == ceil_div(q.len, b_),
           "audit: sequence {} holds {} tokens in {} blocks", slot, q.len, q.table.size());
    logical += static_cast<std::int64_t>(q.table.size());
    ensure(!q.table.empty() && q.last_blk == q.table.back() &&
               (!q.last_private || pool_.refs(q.last_blk) == 1),
           "audit: sequence {} caches last block {} (private: {}), its table ends with {}", slot,
           q.last_blk, q.last_private, q.table.empty() ? -1 : q.table.back());
    for (std::size_t j = 0; j < q.table.size(); ++j) {
      const std::int32_t blk = q.table[j];
      ensure(blk >= 0 && blk < blocks_, "audit: block id {} out of range", blk);
      const auto bi = static_cast<std::size_t>(blk);
      ensure(stamp[bi] != static_cast<std::int64_t>(slot),
             "audit: block {} listed twice by "
             "sequence {}",
             blk, slot);
      stamp[bi] = static_cast<std::int64_t>(slot);
      ++refs[bi];
      const std::int32_t want_fill =
          j + 1 < q.table.size() ? b_ : q.len - static_cast<std::int32_t>(j) * b_;
      ensure(pool_.fill(blk) == want_fill, "audit: block {} holds {} tokens, sequence {} says {}",
             blk, pool_.fill(blk), slot, want_fill);
      if (owner[bi] < 0) {
        owner[bi] = q.request;
      } else if (owner[bi] != q.request) {
        const std::int32_t g = block_group_[bi];
        ensure(g >= 0 && s.requests[static_cast<std::size_t>(owner[bi])].group == g &&
                   s.requests[static_cast<std::size_t>(q.request)].group == g &&
                   block_prefix_index_[bi] == static_cast<std::int32_t>(j),
               "audit: block {} shared by requests {} and {} but is not their group's prefix "
               "block {}",
               blk, owner[bi], q.request, j);
      }
    }
  }
  ensure(logical == logical_blocks_, "audit: {} logical blocks, {} counted", logical,
         logical_blocks_);
  std::int64_t filled = 0;
  for (std::size_t bi = 0; bi < nblocks; ++bi) {
    const auto blk = static_cast<std::int32_t>(bi);
    ensure(refs[bi] == pool_.refs(blk), "audit: block {} has {} references, {} tables list it", blk,
           pool_.refs(blk), refs[bi]);
    filled += pool_.fill(blk);
  }
  ensure(filled == pool_.filled_tokens(), "audit: {} tokens in blocks, {} counted", filled,
         pool_.filled_tokens());
  std::vector<char> on_free_list(nblocks, 0);
  for (std::int32_t blk : pool_.free_list()) {
    const auto bi = static_cast<std::size_t>(blk);
    ensure(!on_free_list[bi], "audit: block {} on the free list twice", blk);
    on_free_list[bi] = 1;
    ensure(pool_.refs(blk) == 0 && pool_.fill(blk) == 0 && block_group_[bi] < 0,
           "audit: free block {} has {} references, {} tokens, group {}", blk, pool_.refs(blk),
           pool_.fill(blk), block_group_[bi]);
  }
  for (std::size_t bi = 0; bi < nblocks; ++bi) {
    ensure(on_free_list[bi] || refs[bi] > 0, "audit: block {} neither free nor referenced", bi);
  }
  for (const auto& [g, blocks_of_g] : prefix_) {
    for (std::size_t j = 0; j < blocks_of_g.size(); ++j) {
      const auto bi = static_cast<std::size_t>(blocks_of_g[j]);
      ensure(refs[bi] > 0 && block_group_[bi] == g &&
                 block_prefix_index_[bi] == static_cast<std::int32_t>(j),
             "audit: group {} prefix block {} (#{}) is free or mislabelled", g, bi, j);
    }
  }
}

}  // namespace iosim::kvcache::detail
