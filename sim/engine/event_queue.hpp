#pragma once
// The engine's event queue: the order in which resident CTAs run their next stages.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace iosim::detail {

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
static_assert(sizeof(Event) == 16);

// The resident CTAs' next stages, earliest first: a binary min-heap, plus replace_top(). The
// engine takes the earliest event and nearly always puts back that CTA's next stage (or its
// successor's start): one sift-down instead of a pop's sift-down and a push's sift-up, with the
// earlier child picked by a select rather than a branch (a separate pop and push cost a tenth of
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

}  // namespace iosim::detail
