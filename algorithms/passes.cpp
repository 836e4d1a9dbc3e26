#include "algorithms/passes.hpp"

#include <algorithm>

#include "sim/base/errors.hpp"

namespace iosim {
namespace {

class SequenceSchedule final : public Schedule {
 public:
  SequenceSchedule(std::unique_ptr<Schedule> first, std::unique_ptr<Schedule> second)
      : first_(std::move(first)),
        second_(std::move(second)),
        first_kernels_(first_->kernels().size()) {}

  std::vector<TensorDecl> tensors() const override {
    std::vector<TensorDecl> out = first_->tensors();
    for (const TensorDecl& d : second_->tensors()) {
      const auto same =
          std::find_if(out.begin(), out.end(), [&](const TensorDecl& e) { return e.id == d.id; });
      if (same == out.end()) {
        out.push_back(d);
        continue;
      }
      ensure(same->matrices == d.matrices && same->rows == d.rows && same->cols == d.cols &&
                 same->elem_bytes == d.elem_bytes,
             "tensor {} declared with two shapes by the forward and backward", tensor_name(d.id));
    }
    return out;
  }

  std::vector<KernelSpec> kernels() const override {
    std::vector<KernelSpec> out = first_->kernels();
    for (KernelSpec& k : second_->kernels()) out.push_back(std::move(k));
    return out;
  }

  bool emit_cta_part(std::size_t kernel, std::int64_t cta, std::size_t part,
                     std::vector<TileOp>& out) const override {
    if (kernel < first_kernels_) return first_->emit_cta_part(kernel, cta, part, out);
    return second_->emit_cta_part(kernel - first_kernels_, cta, part, out);
  }
  Repetition repetition(std::size_t kernel) const override {
    if (kernel < first_kernels_) return first_->repetition(kernel);
    return second_->repetition(kernel - first_kernels_);
  }
  PartRange steady_parts(std::size_t kernel, std::int64_t cta) const override {
    if (kernel < first_kernels_) return first_->steady_parts(kernel, cta);
    return second_->steady_parts(kernel - first_kernels_, cta);
  }

 private:
  std::unique_ptr<Schedule> first_, second_;
  std::size_t first_kernels_;
};

}  // namespace

std::unique_ptr<Schedule> sequence(std::unique_ptr<Schedule> first,
                                   std::unique_ptr<Schedule> second) {
  return std::make_unique<SequenceSchedule>(std::move(first), std::move(second));
}

std::unique_ptr<Schedule> for_pass(Pass pass,
                                   const std::function<std::unique_ptr<Schedule>()>& forward,
                                   const std::function<std::unique_ptr<Schedule>()>& backward) {
  switch (pass) {
    case Pass::fwd:
      return forward();
    case Pass::bwd:
      return backward();
    case Pass::fwdbwd:
      return sequence(forward(), backward());
  }
  return forward();
}

void emit_backward_rows(const AttentionProblem& p, std::int64_t block_q, std::int64_t cta,
                        BackwardRows kernel, std::vector<TileOp>& out) {
  const std::int64_t tr = ceil_div(p.seq, block_q);
  const std::int64_t i = cta % tr;
  const std::int64_t bh = (cta / tr) % p.batch * p.heads + cta / (tr * p.batch);
  const std::int64_t q0 = i * block_q, qr = std::min(block_q, p.seq - q0);
  const std::int64_t d = p.head_dim;
  const TileRef accum{TensorId::dQaccum, bh, q0, qr, 0, d};  // (qr, d) fp32
  if (kernel == BackwardRows::dot_do_o) {
    out.push_back(TileOp::load({TensorId::O, bh, q0, qr, 0, d}, OnChip::reg));   // rO (qr, d)
    out.push_back(TileOp::load({TensorId::dO, bh, q0, qr, 0, d}, OnChip::reg));  // rdO (qr, d)
    out.push_back(costs::row_dot({TensorId::O, bh, q0, qr, 0, d}, d));
    out.push_back(TileOp::store({TensorId::D, bh, q0, qr, 0, 1}));  // (qr)
    out.push_back(costs::zero_grad(accum));
    out.push_back(TileOp::store(accum));
  } else {
    out.push_back(TileOp::load(accum, OnChip::reg));
    out.push_back(costs::convert_dq({TensorId::dQ, bh, q0, qr, 0, d}, d));
    out.push_back(TileOp::store({TensorId::dQ, bh, q0, qr, 0, d}));
  }
}

void emit_backward_keys(const AttentionProblem& p, std::int64_t block_kv, std::int64_t cta,
                        BackwardKeys kernel, std::vector<TileOp>& out) {
  const std::int64_t tc = ceil_div(p.seq_kv, block_kv), j = cta % tc;
  const std::int64_t kv = (cta / tc) % p.batch * p.kv_head_count() + cta / (tc * p.batch);
  const std::int64_t k0 = j * block_kv, kr = std::min(block_kv, p.seq_kv - k0), d = p.head_dim;
  for (const auto& [accum, grad] :
       {std::pair{TensorId::dKaccum, TensorId::dK}, std::pair{TensorId::dVaccum, TensorId::dV}}) {
    const TileRef a{accum, kv, k0, kr, 0, d};  // (kr, d) fp32
    if (kernel == BackwardKeys::zero_dkv) {
      out.push_back(costs::zero_grad(a));
      out.push_back(TileOp::store(a));
    } else {
      out.push_back(TileOp::load(a, OnChip::reg));
      out.push_back(costs::convert_dq({grad, kv, k0, kr, 0, d}, d));
      out.push_back(TileOp::store({grad, kv, k0, kr, 0, d}));
    }
  }
}

KernelSpec backward_keys_kernel(const AttentionProblem& p, std::int64_t block_kv,
                                BackwardKeys kernel) {
  KernelSpec s;
  s.name = kernel == BackwardKeys::zero_dkv ? "zero_dkv_accum" : "convert_dkv";
  s.grid = {ceil_div(p.seq_kv, block_kv), p.batch, p.kv_head_count()};
  s.threads_per_cta = 128;
  s.smem_bytes_per_cta = 0;
  s.registers_per_thread = 32;
  s.pipeline_stages = 1;
  s.mma_dtype = p.dtype;
  s.tensor_instruction = TensorInstruction::mma_sync;
  return s;
}

}  // namespace iosim
