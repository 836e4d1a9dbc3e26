#include "kvcache/contiguous_policy.hpp"

#include <algorithm>
#include <utility>

#include "sim/base/errors.hpp"

namespace iosim::kvcache::detail {

ContiguousPolicy::ContiguousPolicy(const CacheConfig& c, Sequences& seqs)
    : seqs_(seqs),
      bpt_(c.model.bytes_per_token()),
      max_out_(seqs.stream().max_output_tokens),
      arena_(c.budget_bytes / bpt_) {}

// Each sample's region: the prompt plus the most any sample may generate.
bool ContiguousPolicy::fits_alone(std::int32_t r) const {
  const std::int64_t p = seqs_.stream().requests[static_cast<std::size_t>(r)].prompt_tokens;
  return static_cast<std::int64_t>(seqs_.samples()) * (p + max_out_) <= capacity_tokens();
}

std::optional<Admitted> ContiguousPolicy::admit(std::int32_t r) {
  const std::int32_t p = seqs_.stream().requests[static_cast<std::size_t>(r)].prompt_tokens;
  const std::int64_t region = p + max_out_;
  if (arena_.largest_hole() < region) return std::nullopt;
  created_.clear();
  for (std::size_t k = 0; k < seqs_.samples(); ++k) {
    const std::int64_t offset = arena_.reserve(region);
    if (offset < 0) {
      for (std::int32_t slot : created_) free(slot);
      return std::nullopt;
    }
    const std::int32_t slot = seqs_.create(r, k, p);
    Seq& q = seqs_[slot];
    q.offset = offset;
    q.reserved = region;
    filled_ += p;
    created_.push_back(slot);
  }
  return Admitted{static_cast<std::int32_t>(seqs_.samples()), p};
}

void ContiguousPolicy::free(std::int32_t slot) {
  const Seq& q = seqs_[slot];
  arena_.release(q.offset, q.reserved);
  filled_ -= q.len;
  seqs_.release(slot);
}

void ContiguousPolicy::count_bytes(StepTotals& st) const {
  st.reserved_bytes = static_cast<double>((capacity_tokens() - arena_.free_tokens()) * bpt_);
  st.token_bytes = static_cast<double>(filled_ * bpt_);
  st.external_frag_bytes =
      static_cast<double>((arena_.free_tokens() - arena_.largest_hole()) * bpt_);
}

std::int64_t ContiguousPolicy::allocations() const {
  std::int64_t n = 0;
  for (const Seq& q : seqs_.slots()) n += q.request >= 0 ? 1 : 0;
  return n;
}

void ContiguousPolicy::audit() const {
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;  // (offset, size)
  std::int64_t filled = 0;
  for (const Seq& q : seqs_.slots()) {
    if (q.request < 0) continue;
    ensure(
        q.reserved ==
            seqs_.stream().requests[static_cast<std::size_t>(q.request)].prompt_tokens + max_out_,
        "audit: region of {} tokens for request {}", q.reserved, q.request);
    spans.emplace_back(q.offset, q.reserved);
    filled += q.len;
  }
  ensure(filled == filled_, "audit: {} tokens held, {} counted", filled, filled_);
  for (const auto& [offset, size] : arena_.holes()) spans.emplace_back(offset, -size);
  std::sort(spans.begin(), spans.end());
  std::int64_t at = 0;
  bool prev_hole = false;
  for (const auto& [offset, signed_size] : spans) {
    const bool hole = signed_size < 0;
    ensure(offset == at, "audit: address range not tiled at {} (next span at {})", at, offset);
    ensure(!(hole && prev_hole), "audit: adjacent holes at {}", offset);
    at += hole ? -signed_size : signed_size;
    prev_hole = hole;
  }
  ensure(at == capacity_tokens(), "audit: regions and holes cover {} of {} tokens", at,
         capacity_tokens());
}

}  // namespace iosim::kvcache::detail
