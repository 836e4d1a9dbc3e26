#pragma once
// A serving KV cache under a memory budget, step by step: which requests are resident, how the
// cache's bytes are spent, and what each allocation policy wastes.
//
// Scheduler (both policies): one step is one decode iteration. At the start of a step, requests
// that have arrived join the waiting queue; the queue is admitted first-come-first-served while the
// head fits (strictly: a head that does not fit blocks those behind it), a request's prompt is
// prefilled in the step it is admitted, and every running sequence then generates one token (the
// admission step's token is the one prefill produces). A sequence finishes when it has generated
// its output length; its memory is returned at the end of that step. A request whose whole
// footprint could not fit even in an empty cache is rejected on arrival.
//
// Policies:
// - contiguous: each sample reserves prompt + max_output_tokens slots in one contiguous region
//   on admission (as pre-paging servers such as FasterTransformer and Orca did: the output length
//   is unknown in advance). Nothing is shared and nothing is ever preempted.
// - paged: blocks of block_tokens tokens are taken on demand (the prompt's on admission, one more
//   whenever a sequence's last block is full) and returned when the sequence finishes. Admission
//   needs the prompt's blocks plus a watermark of free blocks. A sequence that needs a block when
//   none is free preempts the newest running request (vLLM's recompute preemption): all its blocks
//   are freed, it goes back to the head of the queue, and on readmission its prompt and the tokens
//   it had generated are prefilled again (counted as recomputed tokens). Requests of one prompt
//   group share the full blocks of their common prefix; the samples of one request share the
//   prompt's blocks, and the last, partly filled prompt block is copied on the first write by a
//   sample while others still reference it (copy-on-write; the last writer keeps the original).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvcache/workload.hpp"

namespace iosim::kvcache {

enum class Policy { contiguous, paged };

/// "contiguous" or "paged".
std::string_view policy_name(Policy p);
/// Parses a policy name; throws ConfigError listing the valid names.
Policy parse_policy(std::string_view s);

/// The model's KV-cache shape. K and V of every layer and KV head are stored for each token; with
/// a latent cache (multi-head latent attention, --latent-dim) one row of head_dim columns that K
/// and V share (V is its first latent_dim columns).
struct ModelShape {
  std::int64_t layers = 32, kv_heads = 8, head_dim = 128;
  std::int64_t dtype_bytes = 2;
  std::int64_t latent_dim = 0;  // 0: K and V rows of their own
  /// (2 (K and V), or 1 (a latent row)) * layers * kv_heads * head_dim * dtype_bytes.
  std::int64_t bytes_per_token() const {
    return (latent_dim > 0 ? 1 : 2) * layers * kv_heads * head_dim * dtype_bytes;
  }
};

struct CacheConfig {
  Policy policy = Policy::paged;
  ModelShape model;
  std::int64_t budget_bytes = 0;   // memory for the KV cache
  std::int64_t block_tokens = 16;  // paged: tokens per block
  std::int64_t max_running = 0;    // most requests running at once; 0: only memory limits it
  double watermark = 0.01;         // paged: fraction of blocks admission leaves free
  int series_points = 100;         // the time series keeps between half this and this many windows
};

/// Checks a CacheConfig against a stream (budget holds at least one block or region); throws
/// ConfigError naming the flag.
void validate(const CacheConfig& c);

/// What the cache held during one step, or summed over a window of steps (then each field is
/// the sum over steps; divide by `steps` for means). Bytes are KV-cache bytes.
struct StepTotals {
  double steps = 0;
  double running = 0;              // requests resident (admitted, not finished)
  double sequences = 0;            // resident sampled sequences
  double waiting = 0;              // requests arrived and not admitted (or preempted)
  double reserved_bytes = 0;       // allocated: blocks in use, or reserved regions
  double token_bytes = 0;          // holding a real token (a shared block's tokens count once)
  double future_bytes = 0;         // reserved, empty, and will hold a token this sequence generates
  double internal_frag_bytes = 0;  // reserved, empty, and will never hold a token
  double external_frag_bytes = 0;  // free, but outside the largest hole (contiguous only)
  double free_bytes = 0;           // capacity - reserved
  double saved_by_sharing_bytes = 0;  // what shared blocks would take if each sequence had its own
  double generated_tokens = 0;

  void add(const StepTotals& s, double weight);
};

/// One window of the time series: steps [start_step, start_step + totals.steps).
struct SeriesPoint {
  std::int64_t start_step = 0;
  StepTotals totals;
  double max_running = 0;
};

/// The whole run.
struct KvCacheSummary {
  std::int64_t steps = 0;  // from step 0 to the last finish
  std::int64_t requests = 0, finished = 0, rejected = 0;
  std::int64_t admissions = 0, preemptions = 0;
  std::int64_t prefill_tokens = 0;     // prompt tokens prefilled, readmissions included
  std::int64_t recomputed_tokens = 0;  // of those, prefilled again after a preemption
  std::int64_t cow_copies = 0;         // paged: blocks copied on write
  std::int64_t cow_copied_bytes = 0;
  std::int64_t generated_tokens = 0;
  StepTotals totals;  // sums over all steps
  double max_running = 0, max_waiting = 0, max_reserved_bytes = 0, max_saved_bytes = 0;
  double queue_delay_steps_mean = 0;  // first admission - arrival, over finished requests
  double latency_steps_mean = 0;      // finish - arrival + 1, over finished requests

  /// bytes holding real tokens / bytes reserved, over all steps (time-weighted); 0 when nothing
  /// was ever reserved.
  double utilization() const;
};

struct KvCacheResult {
  CacheConfig config;
  std::int64_t capacity_bytes = 0;  // usable: whole blocks or whole token slots of the budget
  std::int64_t capacity_tokens = 0;
  std::int64_t blocks = 0;  // paged
  KvCacheSummary summary;
  std::vector<SeriesPoint> series;
};

/// Steps one policy over one stream. The stream must outlive the simulator.
class KvCacheSim {
 public:
  /// Throws ConfigError when the configuration is unusable (see validate()).
  KvCacheSim(const CacheConfig& config, const RequestStream& stream);
  ~KvCacheSim();
  KvCacheSim(const KvCacheSim&) = delete;
  KvCacheSim& operator=(const KvCacheSim&) = delete;

  /// True when every request has finished or been rejected.
  bool done() const;
  /// Runs one step, or jumps over an idle gap to the next arrival.
  void step();
  /// Runs to the end.
  void run();
  /// The current step number (steps done so far).
  std::int64_t now() const;
  /// The totals of the last step run (zeros after an idle jump).
  const StepTotals& last_step() const;

  /// Checks every allocator invariant against a recount from the sequences' block tables or
  /// regions: reference counts, no block both free and used or listed twice in a table, shares
  /// only between samples of one request or between requests of one prompt group (full prefix
  /// blocks), token counts, holes and regions tiling the address range. Throws InternalError.
  void audit() const;
  /// Blocks in use (paged) or regions reserved (contiguous).
  std::int64_t allocations() const;

  /// The result so far (complete once done()).
  KvCacheResult result() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Runs one policy over a stream to the end.
KvCacheResult simulate_kvcache(const CacheConfig& config, const RequestStream& stream);

}  // namespace iosim::kvcache
