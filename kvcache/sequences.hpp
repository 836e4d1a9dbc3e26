#pragma once
// The sampled sequences resident in the KV cache, whichever policy holds their tokens, and what
// the stepping loop (simulator.cpp) asks of a policy about them.
//
// A policy (ContiguousPolicy, PagedPolicy) provides:
//   capacity_tokens()      token slots the budget holds;
//   fits_alone(r)          whether request r could ever run in the empty cache;
//   admit(r)               the sequences of r's unfinished samples, with their prompts (and, after
//                          a preemption, the tokens they had generated) in memory; nullopt when
//                          they do not fit now (what it took is given back);
//   append(q, make_room)   one generated token into q; when memory runs out it calls make_room(),
//                          which preempts a request and returns false when that was q's own: then
//                          append returns false;
//   unfilled(q)            q's reserved, empty token slots: those q will fill, those it never will;
//   free(slot)             returns the memory of the sequence in `slot`, and the slot;
//   count_bytes(step)      the step's reserved, token, saved and external-fragmentation bytes;
//   allocations(), audit() see KvCacheSim.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kvcache/workload.hpp"

namespace iosim::kvcache::detail {

// One sampled sequence resident in the cache.
struct Seq {
  std::int32_t request = -1;  // -1: the slot is free
  std::int32_t sample = 0;
  std::int32_t len = 0;     // tokens whose K/V it holds
  std::int32_t target = 0;  // prompt + output: len when it finishes
  std::int32_t prompt = 0;
  std::int32_t last_blk = -1;  // paged: table.back(), kept here to spare the decode loop a load
  bool last_private = false;   // paged: the last block is known to be referenced by this only
  std::int64_t offset = 0;     // contiguous: first slot of its region
  std::int64_t reserved = 0;   // contiguous: region size in tokens
  std::vector<std::int32_t> table;  // paged: physical block of each logical block
};

// A request admitted by a policy.
struct Admitted {
  std::int32_t sequences = 0;       // its samples now resident
  std::int64_t prefill_tokens = 0;  // prompt tokens, plus tokens generated before a preemption
};

// A sequence's reserved token slots that hold no token yet.
struct Unfilled {
  std::int64_t coming = 0;  // the sequence will fill them
  std::int64_t never = 0;   // it finishes first
};

// The sequences in slots that are reused as sequences leave, and per sample of each request its
// slot and how many tokens it had generated when it last left the cache.
class Sequences {
 public:
  explicit Sequences(const RequestStream& stream)
      : s_(stream),
        nsamples_(static_cast<std::size_t>(stream.samples)),
        generated_(stream.requests.size() * nsamples_, 0),
        sample_slot_(stream.requests.size() * nsamples_, -1) {}

  const RequestStream& stream() const { return s_; }
  /// Samples per request.
  std::size_t samples() const { return nsamples_; }
  std::int32_t output_of(std::int32_t r, std::size_t k) const {
    return s_.output_tokens[flat(r, k)];
  }

  Seq& operator[](std::int32_t slot) { return seqs_[static_cast<std::size_t>(slot)]; }
  /// Every slot, free ones (request < 0) included; a slot's number is its index.
  const std::vector<Seq>& slots() const { return seqs_; }
  std::size_t free_slots() const { return free_slots_.size(); }

  /// The slot holding sample k of request r, or -1.
  std::int32_t slot_of(std::int32_t r, std::size_t k) const { return sample_slot_[flat(r, k)]; }
  /// Tokens sample k of request r had generated when it was last preempted or finished.
  std::int32_t& generated(std::int32_t r, std::size_t k) { return generated_[flat(r, k)]; }

  /// A slot for sample k of request r holding `len` tokens; the policy records where they are.
  std::int32_t create(std::int32_t r, std::size_t k, std::int32_t len) {
    std::int32_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = static_cast<std::int32_t>(seqs_.size());
      seqs_.emplace_back();
    }
    Seq& q = seqs_[static_cast<std::size_t>(slot)];
    q.request = r;
    q.sample = static_cast<std::int32_t>(k);
    q.len = len;
    q.prompt = s_.requests[static_cast<std::size_t>(r)].prompt_tokens;
    q.target = q.prompt + output_of(r, k);
    q.table.clear();
    q.last_blk = -1;
    q.last_private = false;
    sample_slot_[flat(r, k)] = slot;
    return slot;
  }
  /// Frees `slot`, whose memory the policy has released.
  void release(std::int32_t slot) {
    Seq& q = seqs_[static_cast<std::size_t>(slot)];
    sample_slot_[flat(q.request, static_cast<std::size_t>(q.sample))] = -1;
    q.request = -1;
    free_slots_.push_back(slot);
  }

 private:
  std::size_t flat(std::int32_t r, std::size_t k) const {
    return static_cast<std::size_t>(r) * nsamples_ + k;
  }

  const RequestStream& s_;
  const std::size_t nsamples_;
  std::vector<Seq> seqs_;
  std::vector<std::int32_t> free_slots_;
  std::vector<std::int32_t> generated_;    // per sample; brought up to date on preempt and finish
  std::vector<std::int32_t> sample_slot_;  // per sample: its Seq, or -1
};

}  // namespace iosim::kvcache::detail
