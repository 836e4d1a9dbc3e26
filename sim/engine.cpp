#include "sim/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <optional>

#include "sim/errors.hpp"
#include "sim/l2_system.hpp"

namespace iosim {
namespace {

// A comparison's outcome as 0 or 1, to combine several with & and | instead of && and ||:
// no short-circuit branches in the simulator's hot checks.
constexpr unsigned bit(bool b) {
  return static_cast<unsigned>(b);
}

// A bandwidth resource served first come, first served. Requests arrive in non-decreasing
// time (the event loop guarantees it), so a single "busy until" cursor is exact for FIFO.
struct Server {
  double busy_until = 0.0;
  double reserve(double t, double duration) {
    busy_until = std::max(t, busy_until) + duration;
    return busy_until;
  }
};

// Where each global tensor lives in the L2 model's address space. Bases are aligned to 1 MiB so
// that no L2 region spans two tensors and per-tensor write-back attribution is exact.
//
// Matrices whose rows are 4 KiB or longer (S, P and their gradients from N = 2048 in 16 bits)
// are laid out in blocks of kBlockRows rows x kBlockChunk bytes, each block one 4 KiB L2 region,
// instead of one region per piece of a row. The L2 model replaces whole 4 KiB regions
// (sim/l2_cache.hpp) where the GPU replaces 128-byte lines; the tiles that read and write such
// matrices (GEMM tiles of 128 rows, 64 to 512 bytes of each) touch a short piece of many rows.
// With row-major regions every piece takes a region of its own, which it fills to 1/16 to 1/64:
// that region occupies L2 capacity the GPU would not spend, and costs a lookup per row (the
// standard-attention sweep's dominant cost). With blocks a tile's pieces of 4 consecutive rows
// share one region, filled 4x denser. Sectors map one to one, so every byte count at sector
// granularity is unchanged; only which sectors share recency differs. Row-wise passes (softmax)
// then touch a row in kBlockChunk pieces, whose blocks the neighbouring rows fill, running on
// other SMs at the same time.
class AddressMap {
 public:
  static constexpr std::uint64_t kBlockRows = 4;
  static constexpr std::uint64_t kBlockChunk = 1024;

  explicit AddressMap(const std::vector<TensorDecl>& decls) {
    constexpr std::uint64_t kAlign = 1ULL << 20;
    std::uint64_t cursor = kAlign;
    for (const TensorDecl& d : decls) {
      ensure(d.matrices > 0 && d.rows > 0 && d.cols > 0 && d.elem_bytes > 0,
             "tensor {} declared with an empty shape", tensor_name(d.id));
      auto& slot = slots_[index_of(d.id)];
      ensure(!slot.has_value(), "tensor {} declared twice", tensor_name(d.id));
      const std::uint64_t pitch =
          static_cast<std::uint64_t>(d.cols) * static_cast<std::uint64_t>(d.elem_bytes);
      const bool blocked = pitch >= kBlockRows * kBlockChunk && pitch % kBlockChunk == 0;
      const auto rows = static_cast<std::uint64_t>(d.rows);
      // A blocked matrix is padded to whole blocks of rows.
      const std::uint64_t matrix_span =
          (blocked ? (rows + kBlockRows - 1) / kBlockRows * kBlockRows : rows) * pitch;
      slot = Placed{d, cursor, pitch, matrix_span, blocked};
      const std::uint64_t span = static_cast<std::uint64_t>(d.matrices) * matrix_span;
      cursor += (span + kAlign - 1) / kAlign * kAlign;
    }
  }

  // Calls visit(run) for the tile's byte ranges (L2System::Run: a range, or pieces of
  // consecutive rows at a fixed stride) in ascending address order within a block row; returns
  // the tile's exact bytes.
  template <typename Visit>
  std::uint64_t for_each_run(const TileRef& t, Visit&& visit) const {
    const auto& slot = slots_[index_of(t.tensor)];
    // The checks run for every tile the engine moves; the message is built only on failure.
    if (!slot.has_value()) [[unlikely]] {
      ensure(false, "tile of undeclared tensor {}", tensor_name(t.tensor));
    }
    const TensorDecl& d = slot->decl;
    // In unsigned arithmetic, with no branch per bound: 0 <= matrix < matrices,
    // 0 <= row0 < rows, 1 <= rows <= d.rows - row0, and the same for columns (d.rows and
    // d.cols are positive: the constructor checked).
    auto u = [](std::int64_t x) { return static_cast<std::uint64_t>(x); };
    const unsigned inside = bit(u(t.matrix) < u(d.matrices)) & bit(u(t.row0) < u(d.rows)) &
                            bit(u(t.rows) - 1 < u(d.rows - t.row0)) & bit(u(t.col0) < u(d.cols)) &
                            bit(u(t.cols) - 1 < u(d.cols - t.col0));
    if (inside == 0) [[unlikely]] {
      out_of_bounds(t, d);
    }
    const auto eb = static_cast<std::uint64_t>(d.elem_bytes);
    const std::uint64_t pitch = slot->pitch;
    const std::uint64_t origin =
        slot->base + static_cast<std::uint64_t>(t.matrix) * slot->matrix_span;
    const std::uint64_t run = static_cast<std::uint64_t>(t.cols) * eb;
    const auto row0 = static_cast<std::uint64_t>(t.row0);
    const auto rows = static_cast<std::uint64_t>(t.rows);
    if (slot->blocked) {
      visit_blocked(origin, pitch, row0, rows, static_cast<std::uint64_t>(t.col0) * eb, run, visit);
    } else if (run == pitch) {  // whole rows: one contiguous range
      visit(L2System::Run{origin + row0 * pitch, run * rows});
    } else {  // a piece of each row
      visit(L2System::Run{origin + row0 * pitch + static_cast<std::uint64_t>(t.col0) * eb, run,
                          rows, pitch});
    }
    return run * rows;
  }

 private:
  struct Placed {
    TensorDecl decl;
    std::uint64_t base = 0;
    std::uint64_t pitch = 0;        // bytes per row
    std::uint64_t matrix_span = 0;  // bytes per matrix in the address space (padded if blocked)
    bool blocked = false;           // laid out in kBlockRows x kBlockChunk blocks
  };

  // Bytes [col_byte, col_byte + len) of rows [row0, row0 + rows) of a blocked matrix: per block
  // row, per chunk, the rows' pieces (one strided run), in ascending addresses. Ranges that
  // follow each other are joined into one (a tile of whole blocks of full rows is one range),
  // single pieces of equal length at a fixed stride into one strided run (a row's chunks).
  template <typename Visit>
  static void visit_blocked(std::uint64_t origin, std::uint64_t pitch, std::uint64_t row0,
                            std::uint64_t rows, std::uint64_t col_byte, std::uint64_t len,
                            Visit& visit) {
    const std::uint64_t end_row = row0 + rows, end_byte = col_byte + len;
    const std::uint64_t chunk = col_byte / kBlockChunk;
    if ((end_byte - 1) / kBlockChunk == chunk) {
      // Within one chunk (GEMM tiles): the pieces of a block's rows are `count` at kBlockChunk
      // apart, and whole blocks of rows repeat that at kBlockRows rows apart: one run for all
      // whole blocks, one for a part block at either end.
      const std::uint64_t column =
          origin + chunk * kBlockRows * kBlockChunk + col_byte % kBlockChunk;
      auto part = [&](std::uint64_t r, std::uint64_t n) {  // rows [r, r + n) of one block
        const std::uint64_t a =
            column + r / kBlockRows * kBlockRows * pitch + r % kBlockRows * kBlockChunk;
        return len == kBlockChunk ? L2System::Run{a, n * kBlockChunk}
                                  : L2System::Run{a, len, n, kBlockChunk};
      };
      std::uint64_t r = row0;
      const std::uint64_t head_end =
          std::min(end_row, (row0 + kBlockRows - 1) / kBlockRows * kBlockRows);
      if (r < head_end) {
        visit(part(r, head_end - r));
        r = head_end;
      }
      if (const std::uint64_t whole = (end_row - r) / kBlockRows; whole > 0) {
        L2System::Run run = part(r, kBlockRows);
        run.blocks = whole;
        run.block_stride = kBlockRows * pitch;
        visit(run);
        r += whole * kBlockRows;
      }
      if (r < end_row) visit(part(r, end_row - r));
      return;
    }
    // Several chunks (row-wise passes): per block row, a partial first chunk, the whole chunks,
    // a partial last chunk, in ascending addresses.
    L2System::Run pending{0, 0, 0, 0, 1, 0};
    auto emit = [&](const L2System::Run& run) {
      if (pending.count == 1 && run.count == 1) {
        if (pending.addr + pending.len == run.addr) {  // contiguous
          pending.len += run.len;
          return;
        }
        if (pending.len == run.len && run.addr > pending.addr + pending.len) {
          pending.stride = run.addr - pending.addr;
          pending.count = 2;
          return;
        }
      } else if (pending.count > 1 && run.count == 1 && pending.len == run.len &&
                 run.addr == pending.addr + pending.count * pending.stride) {
        ++pending.count;
        return;
      }
      if (pending.count != 0) visit(pending);
      pending = run;
    };
    constexpr std::uint64_t kBlockBytes = kBlockRows * kBlockChunk;
    const std::uint64_t c_first = col_byte / kBlockChunk, c_last = (end_byte - 1) / kBlockChunk;
    // Chunks [w_first, w_last] are whole; the first and the last may be partial.
    const std::uint64_t w_first = col_byte % kBlockChunk == 0 ? c_first : c_first + 1;
    const std::uint64_t w_last = end_byte % kBlockChunk == 0 ? c_last : c_last - 1;
    for (std::uint64_t g = row0 / kBlockRows; g * kBlockRows < end_row; ++g) {
      const std::uint64_t r_first = std::max(row0, g * kBlockRows);
      const std::uint64_t r_last = std::min(end_row, (g + 1) * kBlockRows);
      const std::uint64_t n = r_last - r_first;
      // Where chunk c's rows of this block row start.
      const std::uint64_t rows_start =
          origin + g * kBlockRows * pitch + (r_first % kBlockRows) * kBlockChunk;
      auto partial = [&](std::uint64_t c) {  // rows' pieces of a partial chunk, 1 KiB apart
        const std::uint64_t b0 = std::max(col_byte, c * kBlockChunk);
        const std::uint64_t b1 = std::min(end_byte, (c + 1) * kBlockChunk);
        emit({rows_start + c * kBlockBytes + b0 % kBlockChunk, b1 - b0, n, kBlockChunk});
      };
      if (w_first > c_first) partial(c_first);
      if (w_first <= w_last) {
        // Whole chunks of consecutive rows are contiguous, kBlockBytes apart, and adjacent
        // when the rows fill their blocks: one run, as emitting them one by one would join.
        const std::uint64_t whole = w_last - w_first + 1;
        const std::uint64_t first = rows_start + w_first * kBlockBytes;
        if (n == kBlockRows) {
          emit({first, whole * kBlockBytes, 1, 0});
        } else {
          emit({first, n * kBlockChunk, whole, whole > 1 ? kBlockBytes : 0});
        }
      }
      if (w_last < c_last) partial(c_last);
    }
    if (pending.count != 0) visit(pending);
  }

  [[noreturn, gnu::noinline]] static void out_of_bounds(const TileRef& t, const TensorDecl& d) {
    throw InternalError(fmt::format(
        "tile of {} out of bounds: matrix {} rows [{}, {}) cols [{}, {}) of [{}][{}][{}]",
        tensor_name(t.tensor), t.matrix, t.row0, t.row0 + t.rows, t.col0, t.col0 + t.cols,
        d.matrices, d.rows, d.cols));
  }
  std::array<std::optional<Placed>, kTensorCount> slots_{};
};

// Rates of one machine at one SM clock, in bytes or operations per second.
struct Rates {
  double hbm_bps, l2_bps, sm_port_bps, smem_bps_per_sm;
  double tensor_per_sm, fp32_per_sm, sfu_per_sm, int32_per_sm;
  double l2_latency_s, hbm_latency_s, launch_s;
  double smem_latency_s, fp32_latency_s;
  int sm_count;

  Rates(const HardwareProfile& p, double clock_mhz, Dtype mma_dtype,
        TensorInstruction instruction = TensorInstruction::wgmma) {
    const double clock_hz = clock_mhz * 1e6;
    const double ratio = clock_mhz / p.sm.boost_clock_mhz.value;
    sm_count = p.sm.count.value;
    hbm_bps = p.hbm.bandwidth_gbps.value * 1e9 * p.hbm.achievable_fraction.value;
    l2_bps = p.l2.bandwidth_gbps.value * 1e9 * ratio;  // the L2 runs in the SM clock domain
    sm_port_bps = p.sm.l2_to_sm_bytes_per_clk.value * clock_hz;
    smem_bps_per_sm = p.sm.smem_bandwidth_bytes_per_clk.value * clock_hz;
    if (instruction == TensorInstruction::mma_sync) {
      // Measured per clock for fp16; other operand types keep the peak's ratio to fp16.
      tensor_per_sm = p.compute.mma_sync_flops_per_clk_per_sm.value * clock_hz *
                      p.tensor_flops_per_s(mma_dtype) / p.tensor_flops_per_s(Dtype::fp16);
    } else {
      tensor_per_sm = p.tensor_flops_per_s(mma_dtype) * ratio / sm_count;
    }
    fp32_per_sm = p.fp32_flops_per_s() * ratio / sm_count;
    sfu_per_sm = p.compute.sfu_ops_per_clk_per_sm.value * clock_hz;
    int32_per_sm = p.compute.int32_ops_per_clk_per_sm.value * clock_hz;
    smem_latency_s = p.sm.smem_latency_cycles.value / clock_hz;
    fp32_latency_s = p.compute.fp32_latency_cycles.value / clock_hz;
    l2_latency_s = p.l2.hit_latency_cycles.value / clock_hz;
    hbm_latency_s = p.hbm.latency_ns.value * 1e-9;
    launch_s = p.launch.kernel_overhead_us.value * 1e-6;
    per = {1.0 / hbm_bps,       1.0 / l2_bps,      1.0 / sm_port_bps, 1.0 / smem_bps_per_sm,
           1.0 / tensor_per_sm, 1.0 / fp32_per_sm, 1.0 / sfu_per_sm,  1.0 / int32_per_sm};
  }

  // Seconds per byte or operation: the engine multiplies by these a few dozen times per stage,
  // where dividing by the rates cost about 5% of flash1's simulation time. A product differs
  // from the quotient in the last bit at most; where two events then tie differently, the L2
  // sees two accesses in the other order (a few KB of write-back moved at N = 512 in the README
  // sweep, nothing in the validation cases).
  struct SecondsPer {
    double hbm_byte, l2_byte, port_byte, smem_byte;
    double tensor_flop, fp32_flop, sfu_op, int32_op;
  } per{};
};

// Warp schedulers (SM sub-partitions) per SM on Ampere and Hopper: the A100 and H100
// whitepapers' SM diagrams show four processing blocks, each with its own scheduler.
constexpr double kSchedulersPerSm = 4.0;

struct CtaState {
  std::int64_t cta = -1;
  int sm = 0;
  std::vector<TileOp> ops;  // the current part of the CTA's operations
  std::size_t part = 0;
  bool more_parts = false;
  std::size_t pc = 0;
  std::size_t ring = 0;             // the stage's slot in compute_end: stage number % its size
  std::vector<double> compute_end;  // ring of the last `pipeline_stages` compute ends
  double compute_free = 0.0;
  double end = 0.0;
};

// When a resident CTA's next stage starts: earlier time first, then earlier issue. Times are
// never negative (nor -0.0: they are sums and maxima of non-negative durations from 0.0), and
// non-negative doubles order as their bit patterns do, so the order is one 128-bit integer
// compare (no branch for the heap below to mispredict), on 16-byte events.
struct Event {
  static constexpr int kSlotBits = 24;
  static constexpr std::uint64_t kMaxIssue = std::uint64_t{1} << (64 - kSlotBits);

  std::uint64_t time_bits;  // the time's bit pattern
  std::uint64_t order;      // issue number << kSlotBits | the CTA's slot (issue numbers are unique)

  Event(double t, std::uint64_t issue, std::uint32_t slot)
      : time_bits(std::bit_cast<std::uint64_t>(t)), order(issue << kSlotBits | slot) {}
  double t() const { return std::bit_cast<double>(time_bits); }
  std::uint32_t slot() const {
    return static_cast<std::uint32_t>(order & ((std::uint64_t{1} << kSlotBits) - 1));
  }
  bool operator<(const Event& o) const {
    __extension__ using U128 = unsigned __int128;
    return ((U128{time_bits} << 64) | order) < ((U128{o.time_bits} << 64) | o.order);
  }
};

// The resident CTAs' next stages, earliest first: a binary min-heap, plus replace_top(). The
// engine takes the earliest event and nearly always puts back that CTA's next stage (or its
// successor's start): one sift-down instead of a pop's sift-down and a push's sift-up, with the
// earlier child picked by a select rather than a branch (popping the event queue was a tenth of
// the simulator's time where few CTAs run long, as flash1's). Events are totally ordered (issue
// numbers are unique), so the order they leave in does not depend on the heap's layout.
class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.front(); }
  void push(const Event& e) {
    std::size_t i = heap_.size();
    heap_.push_back(e);
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!(e < heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  void pop() {
    const Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(last);
  }
  /// pop() then push(e), in one pass.
  void replace_top(const Event& e) { sift_down(e); }

 private:
  // Places `e` at the root's hole, moving earlier children up.
  void sift_down(const Event& e) {
    const std::size_t n = heap_.size();
    std::size_t i = 0;
    for (;;) {
      std::size_t child = 2 * i + 1;
      if (child >= n) break;
      child += static_cast<std::size_t>(child + 1 < n && heap_[child + 1] < heap_[child]);
      if (!(heap_[child] < e)) break;
      heap_[i] = heap_[child];
      i = child;
    }
    heap_[i] = e;
  }
  std::vector<Event> heap_;
};

class KernelRun {
 public:
  KernelRun(const HardwareProfile& profile, const Schedule& schedule, std::size_t kernel_index,
            const KernelSpec& spec, const Occupancy& occ, const AddressMap& addresses, L2System* l2,
            double clock_mhz)
      : schedule_(schedule),
        kernel_index_(kernel_index),
        spec_(spec),
        addresses_(addresses),
        l2_(l2),
        rates_(profile, clock_mhz, spec.mma_dtype, spec.tensor_instruction),
        ctas_per_sm_(occ.ctas_per_sm),
        warps_per_cta_((spec.threads_per_cta + 31) / 32),
        ports_(static_cast<std::size_t>(rates_.sm_count)),
        resident_on_sm_(static_cast<std::size_t>(rates_.sm_count), 0) {}

  double run(Counters& c) {
    counters_ = &c;
    const std::int64_t ctas = spec_.grid.count();
    const std::int64_t slots =
        std::min<std::int64_t>(ctas, static_cast<std::int64_t>(rates_.sm_count) * ctas_per_sm_);
    if (slots >= (std::int64_t{1} << Event::kSlotBits)) {
      throw ConfigError(
          fmt::format("kernel '{}': {} resident CTAs, more than the engine tracks ({})", spec_.name,
                      slots, std::int64_t{1} << Event::kSlotBits));
    }
    states_.resize(static_cast<std::size_t>(slots));
    // First wave: breadth-first over SMs (CTA i on SM i mod #SMs).
    for (std::int64_t s = 0; s < slots; ++s) {
      events_.push(start_cta(static_cast<std::uint32_t>(s), next_cta_++,
                             static_cast<int>(s % rates_.sm_count), 0.0));
    }
    double last_finish = 0.0;
    while (!events_.empty()) {
      const Event ev = events_.top();
      const double now = ev.t();
      CtaState& st = states_[ev.slot()];
      run_stage(st, now);
      next_part(st);
      if (st.pc < st.ops.size()) {
        events_.replace_top({next_stage_time(st, now), issue(), ev.slot()});
        continue;
      }
      last_finish = std::max(last_finish, st.end);
      --resident_;
      --resident_on_sm_[static_cast<std::size_t>(st.sm)];
      if (next_cta_ < ctas) {
        events_.replace_top(start_cta(ev.slot(), next_cta_++, st.sm, st.end));
      } else {
        events_.pop();
      }
    }
    return last_finish + rates_.launch_s;
  }

 private:
  // The next event's issue number.
  std::uint64_t issue() {
    if (seq_ == Event::kMaxIssue) [[unlikely]] {
      throw InternalError(
          fmt::format("kernel '{}': more than {} engine events", spec_.name, Event::kMaxIssue));
    }
    return seq_++;
  }

  // Places CTA `cta` in `slot` on `sm` at time `t`; returns its first stage's event.
  Event start_cta(std::uint32_t slot, std::int64_t cta, int sm, double t) {
    CtaState& st = states_[slot];
    st.cta = cta;
    st.sm = sm;
    st.ops.clear();
    st.part = 0;
    st.more_parts = schedule_.emit_cta_part(kernel_index_, cta, 0, st.ops);
    st.pc = 0;
    next_part(st);
    st.ring = 0;
    st.compute_end.assign(static_cast<std::size_t>(std::max(1, spec_.pipeline_stages)), t);
    st.compute_free = t;
    st.end = t;
    ++resident_;
    ++resident_on_sm_[static_cast<std::size_t>(sm)];
    return {t, issue(), slot};
  }

  // Once a CTA's operations are used up, emits its next part, skipping empty ones.
  void next_part(CtaState& st) const {
    while (st.pc == st.ops.size() && st.more_parts) {
      st.ops.clear();
      st.pc = 0;
      st.more_parts = schedule_.emit_cta_part(kernel_index_, st.cta, ++st.part, st.ops);
    }
  }

  double next_stage_time(const CtaState& st, double now) const {
    // The next stage's buffer is the one the stage `pipeline_stages` back computed from.
    return std::max(now, st.compute_end[st.ring]);
  }

  // Moves a tile between HBM/L2 and the chip; returns {requested, missed + written back} bytes.
  struct Traffic {
    double requested = 0, dram = 0;
    bool missed = false;
  };

  // The tile's runs, in order, into runs_ (with the L2 on); returns its exact bytes.
  std::uint64_t gather_runs(const TileRef& tile) {
    runs_.clear();
    return addresses_.for_each_run(tile, [&](const L2System::Run& run) {
      if (l2_ != nullptr) runs_.push_back(run);
    });
  }

  void load(const TileOp& op, int sm, Traffic& tr) {
    const std::size_t ti = index_of(op.tile.tensor);
    const std::uint64_t exact = gather_runs(op.tile);
    if (l2_ != nullptr) {
      const L2Cache::ReadOutcome r =
          l2_->read(runs_, op.tile.tensor, sm, counters_->hbm.write_bytes);
      counters_->l2.read_bytes[ti] += r.requested_bytes;
      counters_->hbm.read_bytes[ti] += r.miss_bytes;
      tr.requested += static_cast<double>(r.requested_bytes);
      tr.dram += static_cast<double>(r.miss_bytes);
      tr.missed = tr.missed || r.miss_bytes > 0;
    } else {
      counters_->hbm.read_bytes[ti] += exact;
      tr.requested += static_cast<double>(exact);
      tr.dram += static_cast<double>(exact);
      tr.missed = true;
    }
    if (op.on_chip == OnChip::smem) counters_->smem_write_bytes += exact;
  }

  void store(const TileOp& op, int sm, Traffic& tr) {
    const std::size_t ti = index_of(op.tile.tensor);
    const std::uint64_t exact = gather_runs(op.tile);
    if (l2_ != nullptr) {
      const std::uint64_t bytes = l2_->write(runs_, op.tile.tensor, sm, counters_->hbm.write_bytes);
      counters_->l2.write_bytes[ti] += bytes;
      tr.requested += static_cast<double>(bytes);
    } else {
      counters_->hbm.write_bytes[ti] += exact;
      tr.requested += static_cast<double>(exact);
      tr.dram += static_cast<double>(exact);
    }
    if (op.on_chip == OnChip::smem) counters_->smem_read_bytes += exact;
  }

  // An fp32 atomic add (RED) done by the L2: the old value is read there (fetched from DRAM on
  // a miss) and the sum kept dirty. Counted as one L2 read and one L2 write of the tile, so the
  // three-level counts stay comparable with the two-level ones (an HBM read and write); the
  // addends cross the SM's port once.
  void reduce(const TileOp& op, int sm, Traffic& tr) {
    const std::size_t ti = index_of(op.tile.tensor);
    const std::uint64_t exact = addresses_.for_each_run(op.tile, [&](const L2System::Run& run) {
      if (l2_ == nullptr) return;
      // Each piece (of every block of rows) is read, then written, before the next.
      run.for_each_piece([&](std::uint64_t a) {
        const L2Cache::ReadOutcome r =
            l2_->read(a, run.len, op.tile.tensor, sm, counters_->hbm.write_bytes);
        counters_->l2.read_bytes[ti] += r.requested_bytes;
        counters_->hbm.read_bytes[ti] += r.miss_bytes;
        tr.dram += static_cast<double>(r.miss_bytes);
        const std::uint64_t bytes =
            l2_->write(a, run.len, op.tile.tensor, sm, counters_->hbm.write_bytes);
        counters_->l2.write_bytes[ti] += bytes;
        tr.requested += static_cast<double>(bytes);
      });
    });
    if (l2_ == nullptr) {
      counters_->hbm.read_bytes[ti] += exact;
      counters_->hbm.write_bytes[ti] += exact;
      tr.requested += static_cast<double>(exact);
      tr.dram += 2.0 * static_cast<double>(exact);
    }
  }

  // Time at which `bytes` requested at `t` by a CTA on `sm` have all arrived.
  double transfer(double t, int sm, const Traffic& tr) {
    const double hbm_done = hbm_.reserve(t, tr.dram * rates_.per.hbm_byte);
    const double l2_done =
        l2_ != nullptr ? l2_server_.reserve(t, tr.requested * rates_.per.l2_byte) : t;
    const double port_done =
        ports_[static_cast<std::size_t>(sm)].reserve(t, tr.requested * rates_.per.port_byte);
    return std::max({hbm_done, l2_done, port_done});
  }

  // The work of a run of compute ops, as the SM's pipes see it.
  struct Work {
    double tensor_flops = 0, fp32_flops = 0, sfu_ops = 0, int32_ops = 0, smem_bytes = 0;
    double chain_s = 0;  // latency one warp waits through in sequence (shared-memory round trips)
    void add(const TileOp& op, const Rates& r) {
      tensor_flops += static_cast<double>(op.tensor_flops);
      fp32_flops += static_cast<double>(op.fp32_flops);
      sfu_ops += static_cast<double>(op.sfu_ops);
      int32_ops += static_cast<double>(op.int_ops);
      smem_bytes += static_cast<double>(op.smem_read_bytes);
      chain_s += static_cast<double>(op.smem_round_trips) * r.smem_latency_s +
                 static_cast<double>(op.chain_fp32_ops) * r.fp32_latency_s;
    }
  };

  // Time the CTA's warps take for `w` on an SM shared by `share` resident CTAs.
  double compute_time(const Work& w, double share) const {
    // The SM's pipes (tensor cores, FP32, SFU, INT32, shared memory) are shared by the CTAs
    // resident on it. One warp uses them one after another (an mma waits for its ldmatrix, the
    // softmax for the mma); other warps on the same scheduler fill the gaps. With w warps per
    // scheduler the pipes overlap that far: all of them at once as w grows (the busiest pipe
    // decides), none with one warp (their times add). A warp's own chain of dependent latencies
    // is filled the same way: fully exposed with one warp per scheduler.
    const double pipes[] = {w.tensor_flops * rates_.per.tensor_flop,
                            w.fp32_flops * rates_.per.fp32_flop, w.sfu_ops * rates_.per.sfu_op,
                            w.int32_ops * rates_.per.int32_op, w.smem_bytes * rates_.per.smem_byte};
    double busiest = 0.0, total = 0.0;
    for (double pipe : pipes) {
      busiest = std::max(busiest, pipe);
      total += pipe;
    }
    auto overlapped = [&](double warps) {
      const double per_scheduler = std::max(1.0, warps / kSchedulersPerSm);
      // (x / 1 is x: no division with one warp per scheduler, as FlashAttention's 4-warp CTAs.)
      return busiest + (per_scheduler == 1.0 ? total - busiest : (total - busiest) / per_scheduler);
    };
    // Its share of the SM's pipes, and at least its own critical path: its work with only its
    // own warps to overlap it, plus the dependent latencies of its warps.
    return std::max(share * overlapped(share * warps_per_cta_),
                    overlapped(warps_per_cta_) + w.chain_s);
  }

  // Runs one stage: the loads the pipeline prefetches, then the computes and stores that use
  // them, with any in-step loads (TileOp::in_step) among the computes.
  void run_stage(CtaState& st, double t) {
    Traffic loads, stores, in_step;
    Work before, after;  // compute before / from the first in-step load on
    bool after_in_step = false;
    const std::uint64_t written_back_before = l2_ != nullptr ? l2_->written_back_bytes() : 0;
    const std::uint64_t smem_before = counters_->smem_write_bytes + counters_->smem_read_bytes;
    auto is_prefetched_load = [&](std::size_t pc) {
      return st.ops[pc].kind == OpKind::load && !st.ops[pc].in_step;
    };
    // The threads that issue a load compute its addresses (TileOp::int_ops, e.g. page lookups).
    while (st.pc < st.ops.size() && is_prefetched_load(st.pc)) {
      before.int32_ops += static_cast<double>(st.ops[st.pc].int_ops);
      load(st.ops[st.pc++], st.sm, loads);
    }
    // Dirty lines evicted by this stage's loads go to DRAM alongside its misses.
    std::uint64_t written_back = l2_ != nullptr ? l2_->written_back_bytes() : 0;
    loads.dram += static_cast<double>(written_back - written_back_before);
    while (st.pc < st.ops.size() && !is_prefetched_load(st.pc)) {
      const TileOp& op = st.ops[st.pc++];
      if (op.kind == OpKind::load) {  // in-step
        after.int32_ops += static_cast<double>(op.int_ops);
        load(op, st.sm, in_step);
        const std::uint64_t now = l2_ != nullptr ? l2_->written_back_bytes() : 0;
        in_step.dram += static_cast<double>(now - written_back);
        written_back = now;
        after_in_step = true;
      } else if (op.kind == OpKind::store) {
        store(op, st.sm, stores);
      } else if (op.kind == OpKind::reduce) {
        reduce(op, st.sm, stores);
      } else {
        (after_in_step ? after : before).add(op, rates_);
      }
    }
    if (l2_ != nullptr) {
      stores.dram += static_cast<double>(l2_->written_back_bytes() - written_back);
    }
    // Shared-memory bytes the loads wrote and the stores read belong to the stage's start.
    before.smem_bytes +=
        static_cast<double>(counters_->smem_write_bytes + counters_->smem_read_bytes - smem_before);
    const double compute_smem_read =
        before.smem_bytes + after.smem_bytes -
        static_cast<double>(counters_->smem_write_bytes + counters_->smem_read_bytes - smem_before);
    for (const Work* w : {&before, &after}) {
      counters_->tensor_flops += static_cast<std::uint64_t>(w->tensor_flops);
      counters_->fp32_flops += static_cast<std::uint64_t>(w->fp32_flops);
      counters_->sfu_ops += static_cast<std::uint64_t>(w->sfu_ops);
      counters_->int32_ops += static_cast<std::uint64_t>(w->int32_ops);
    }
    counters_->smem_read_bytes += static_cast<std::uint64_t>(compute_smem_read);

    double copy_end = t;
    if (loads.requested > 0) copy_end = transfer(t, st.sm, loads) + latency_of(loads);
    const double share = resident_on_sm_[static_cast<std::size_t>(st.sm)];
    const double compute_start = std::max(st.compute_free, copy_end);
    double compute_end = compute_start + compute_time(before, share);
    if (after_in_step) {
      // Issued when the step starts; bandwidth is reserved now, in event order.
      const double arrival =
          std::max(transfer(t, st.sm, in_step), compute_start) + latency_of(in_step);
      compute_end = std::max(compute_end, arrival) + compute_time(after, share);
    }
    st.compute_free = compute_end;
    st.compute_end[st.ring] = compute_end;
    double end = compute_end;
    if (stores.requested > 0) {
      // Stores drain after the compute; their bandwidth is reserved now, in event order.
      const double drained = transfer(t, st.sm, stores);
      end = std::max(compute_end + stores.requested * rates_.per.port_byte, drained);
    }
    st.end = std::max(st.end, end);
    if (++st.ring == st.compute_end.size()) st.ring = 0;
  }

  double latency_of(const Traffic& tr) const {
    return (tr.missed || l2_ == nullptr) ? rates_.hbm_latency_s : rates_.l2_latency_s;
  }

  const Schedule& schedule_;
  std::size_t kernel_index_;
  const KernelSpec& spec_;
  const AddressMap& addresses_;
  L2System* l2_;
  Rates rates_;
  int ctas_per_sm_;
  double warps_per_cta_;
  Counters* counters_ = nullptr;
  Server hbm_, l2_server_;
  std::vector<Server> ports_;
  std::vector<int> resident_on_sm_;
  int resident_ = 0;
  std::vector<CtaState> states_;
  EventQueue events_;
  std::uint64_t seq_ = 0;  // events issued
  std::int64_t next_cta_ = 0;
  // Runs of the tile being moved: sums of per-run bytes in doubles are exact (integers far
  // below 2^53), so sending a tile's runs to the L2 together counts what run-by-run did.
  std::vector<L2System::Run> runs_;
};

}  // namespace

Occupancy occupancy(const HardwareProfile& p, const KernelSpec& k) {
  const SmSpec& sm = p.sm;
  if (k.smem_bytes_per_cta > sm.smem_per_cta_max_bytes.value) {
    return {0, fmt::format("shared memory: {} bytes per CTA needed, {} available per CTA",
                           k.smem_bytes_per_cta, sm.smem_per_cta_max_bytes.value)};
  }
  if (k.threads_per_cta > 1024 || k.threads_per_cta > sm.max_threads_per_sm.value) {
    return {0, fmt::format("threads: {} per CTA exceed the limit", k.threads_per_cta)};
  }
  struct Limit {
    std::int64_t ctas;
    const char* name;
  };
  const std::int64_t smem_need = k.smem_bytes_per_cta + sm.smem_reserved_per_cta_bytes.value;
  const int regs = std::min(k.registers_per_thread, sm.max_registers_per_thread.value);
  // Registers are allocated per warp in units of 256.
  const std::int64_t regs_per_warp = (static_cast<std::int64_t>(regs) * 32 + 255) / 256 * 256;
  const std::int64_t warps = (k.threads_per_cta + 31) / 32;
  const Limit limits[] = {
      {sm.smem_per_sm_bytes.value / smem_need, "shared memory"},
      {sm.registers_per_sm.value / (regs_per_warp * warps), "registers"},
      {sm.max_threads_per_sm.value / k.threads_per_cta, "threads"},
      {sm.max_ctas_per_sm.value, "CTA slots"},
  };
  const Limit* best =
      std::min_element(std::begin(limits), std::end(limits),
                       [](const Limit& a, const Limit& b) { return a.ctas < b.ctas; });
  if (best->ctas <= 0) return {0, fmt::format("{}: not even one CTA fits on an SM", best->name)};
  return {static_cast<int>(best->ctas), best->name};
}

std::string classify_bound(const HardwareProfile& p, const Counters& c, double time_s,
                           double sm_clock_mhz, Dtype mma_dtype, TensorInstruction instruction) {
  const Rates r(p, sm_clock_mhz > 0 ? sm_clock_mhz : p.sm.boost_clock_mhz.value, mma_dtype,
                instruction);
  const double sms = r.sm_count;
  const double t_memory =
      std::max(static_cast<double>(c.hbm.read_total() + c.hbm.write_total()) / r.hbm_bps,
               static_cast<double>(c.l2.read_total() + c.l2.write_total()) / r.l2_bps);
  // The engine runs a CTA's tensor-core, FP32 and SFU work one after another, so their floors add.
  const double t_compute = static_cast<double>(c.tensor_flops) / (r.tensor_per_sm * sms) +
                           static_cast<double>(c.fp32_flops) / (r.fp32_per_sm * sms) +
                           static_cast<double>(c.int32_ops) / (r.int32_per_sm * sms) +
                           static_cast<double>(c.sfu_ops) / (r.sfu_per_sm * sms);
  if (std::max(t_memory, t_compute) < 0.5 * time_s) return "latency";
  return t_memory >= t_compute ? "memory" : "compute";
}

EngineResult run_schedule(const HardwareProfile& profile, const Schedule& schedule,
                          const EngineOptions& options) {
  const double clock_mhz =
      options.sm_clock_mhz > 0 ? options.sm_clock_mhz : profile.sm.boost_clock_mhz.value;
  const AddressMap addresses(schedule.tensors());
  std::optional<L2System> l2;
  if (options.l2_enabled) {
    l2.emplace(profile.l2.size_bytes.value, profile.l2.sector_bytes.value,
               profile.l2.partitions.value, profile.l2.max_dirty_fraction.value);
  }

  EngineResult result;
  const std::vector<KernelSpec> specs = schedule.kernels();
  for (std::size_t k = 0; k < specs.size(); ++k) {
    KernelSpec spec = specs[k];
    if (const auto it = options.registers_by_role.find(spec.role);
        !spec.role.empty() && it != options.registers_by_role.end()) {
      spec.registers_per_thread = it->second;
    }
    KernelResult kr;
    kr.spec = spec;
    kr.occupancy = occupancy(profile, spec);
    if (kr.occupancy.ctas_per_sm == 0) {
      throw ConfigError(fmt::format("kernel '{}' does not fit on an SM of {}: {}", spec.name,
                                    profile.name, kr.occupancy.limiter));
    }
    if (l2 && options.flush_l2_between_kernels) {
      PerTensor discarded{};  // a flush's write-backs belong to no kernel
      l2->flush(discarded);
    }
    const double slots = static_cast<double>(profile.sm.count.value) * kr.occupancy.ctas_per_sm;
    kr.waves = static_cast<double>(spec.grid.count()) / slots;
    kr.idle_sm_fraction = 1.0 - static_cast<double>(std::min<std::int64_t>(
                                    spec.grid.count(), profile.sm.count.value)) /
                                    profile.sm.count.value;
    KernelRun run(profile, schedule, k, spec, kr.occupancy, addresses, l2 ? &*l2 : nullptr,
                  clock_mhz);
    kr.time_s = run.run(kr.counters);
    kr.counters.l2_dirty_at_end_bytes = l2 ? l2->dirty_bytes() : 0;
    kr.bound = classify_bound(profile, kr.counters, kr.time_s, clock_mhz, spec.mma_dtype,
                              spec.tensor_instruction);
    kr.achieved_hbm_gbps =
        static_cast<double>(kr.counters.hbm.read_total() + kr.counters.hbm.write_total()) /
        kr.time_s / 1e9;
    kr.achieved_l2_gbps =
        static_cast<double>(kr.counters.l2.read_total() + kr.counters.l2.write_total()) /
        kr.time_s / 1e9;
    result.total += kr.counters;
    result.time_s += kr.time_s;
    result.kernels.push_back(std::move(kr));
  }
  return result;
}

}  // namespace iosim
