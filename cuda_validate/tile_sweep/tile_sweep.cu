// iosim_tile_sweep: every configuration of our wg1_tma_fwd and wg1_mma_fwd forwards
// (sweep_instances.hpp) on each shape of a shape list, for issue #46 (which tile is fastest,
// measured): per configuration its launch facts (threads, registers, local bytes per thread,
// i.e. spills, dynamic and static shared memory), an output check against an FP64 host reference
// on sampled rows of the first head, and --sets timing sets. A set times every configuration of
// a shape once, in its own shuffled order (seeded by the set number), so that drift of the clock
// over a set does not favour the configurations timed first: 2 warm-up launches, then
// CUDA events around R launches back to back (R so that the timed run lasts about 20 ms, at
// least 5), the mean per launch.
//
// Usage: iosim_tile_sweep SHAPES OUT.json [--sets N] [--family wg1_tma|wg1_mma]
//   SHAPES: one shape a line, "name d N batch heads causal(0|1)"; '#' starts a comment.
//   --sets 0 checks and records launch facts without timing (the blind predictions are made from
//   those facts before any time is measured).
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../kernels/harness_kernels.cuh"
#include "sweep_kernel.hpp"

namespace iosim_cuda {
namespace {

struct Shape {
  std::string name;
  int d = 0, seq = 0, batch = 0, heads = 0;
  bool causal = false;
};

std::vector<Shape> read_shapes(const char* path) {
  std::ifstream in(path);
  if (!in) throw CudaError(std::string("cannot read ") + path);
  std::vector<Shape> shapes;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream s(line);
    Shape sh;
    int causal = 0;
    if (!(s >> sh.name)) continue;
    if (!(s >> sh.d >> sh.seq >> sh.batch >> sh.heads >> causal))
      throw CudaError("bad shape line: " + line);
    sh.causal = causal != 0;
    shapes.push_back(sh);
  }
  return shapes;
}

// FP64 attention of row r of the first (batch, head): the host check's reference.
std::vector<double> reference_row(const std::vector<half>& q, const std::vector<half>& k,
                                  const std::vector<half>& v, int seq, int d, float scale,
                                  bool causal, int r) {
  std::vector<double> s(seq);
  double m = -INFINITY;
  const int last = causal ? r : seq - 1;
  for (int j = 0; j <= last; ++j) {
    double dot = 0;
    for (int c = 0; c < d; ++c)
      dot += static_cast<double>(__half2float(q[static_cast<size_t>(r) * d + c])) *
             __half2float(k[static_cast<size_t>(j) * d + c]);
    s[j] = dot * scale;
    m = std::max(m, s[j]);
  }
  std::vector<double> o(d, 0.0);
  double l = 0;
  for (int j = 0; j <= last; ++j) {
    const double p = std::exp(s[j] - m);
    l += p;
    for (int c = 0; c < d; ++c) o[c] += p * __half2float(v[static_cast<size_t>(j) * d + c]);
  }
  for (double& x : o) x /= l;
  return o;
}

void json_string(std::ostream& os, const std::string& s) {
  os << '"' << s << '"';
}

}  // namespace
}  // namespace iosim_cuda

int main(int argc, char** argv) {
  using namespace iosim_cuda;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SHAPES OUT.json [--sets N] [--family F]\n", argv[0]);
    return 2;
  }
  int sets = 3;
  std::string family;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--sets")
      sets = std::stoi(argv[i + 1]);
    else if (flag == "--family")
      family = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  try {
    const std::vector<Shape> shapes = read_shapes(argv[1]);
    std::vector<SweepKernel> kernels;
#define IOSIM_SWEEP_GATHER(fn) fn(kernels);
    IOSIM_SWEEP_PARTS(IOSIM_SWEEP_GATHER)
#undef IOSIM_SWEEP_GATHER
    cudaDeviceProp prop{};
    IOSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::ofstream out(argv[2]);
    out << "{\"format\": \"iosim-tile-sweep\", \"version\": 1, \"device\": ";
    json_string(out, prop.name);
    out << ", \"sets\": " << sets << ", \"runs\": [";
    bool first_run = true;
    cudaStream_t stream;
    IOSIM_CUDA_CHECK(cudaStreamCreate(&stream));
    cudaEvent_t e0, e1;
    IOSIM_CUDA_CHECK(cudaEventCreate(&e0));
    IOSIM_CUDA_CHECK(cudaEventCreate(&e1));
    for (const Shape& sh : shapes) {
      const size_t elems = static_cast<size_t>(sh.batch) * sh.heads * sh.seq * sh.d;
      half *q, *k, *v, *o;
      float* l;
      IOSIM_CUDA_CHECK(cudaMalloc(&q, elems * 2));
      IOSIM_CUDA_CHECK(cudaMalloc(&k, elems * 2));
      IOSIM_CUDA_CHECK(cudaMalloc(&v, elems * 2));
      IOSIM_CUDA_CHECK(cudaMalloc(&o, elems * 2));
      IOSIM_CUDA_CHECK(cudaMalloc(&l, elems / sh.d * 4));
      init_uniform_kernel<<<1024, 256>>>(q, static_cast<int64_t>(elems), 1);
      init_uniform_kernel<<<1024, 256>>>(k, static_cast<int64_t>(elems), 2);
      init_uniform_kernel<<<1024, 256>>>(v, static_cast<int64_t>(elems), 3);
      IOSIM_CUDA_CHECK(cudaDeviceSynchronize());
      const size_t head = static_cast<size_t>(sh.seq) * sh.d;
      std::vector<half> hq(head), hk(head), hv(head), ho(head);
      IOSIM_CUDA_CHECK(cudaMemcpy(hq.data(), q, head * 2, cudaMemcpyDeviceToHost));
      IOSIM_CUDA_CHECK(cudaMemcpy(hk.data(), k, head * 2, cudaMemcpyDeviceToHost));
      IOSIM_CUDA_CHECK(cudaMemcpy(hv.data(), v, head * 2, cudaMemcpyDeviceToHost));
      const float scale = 1.f / std::sqrt(static_cast<float>(sh.d));
      const std::vector<int> rows = {0, 1, sh.seq / 3, sh.seq / 2, sh.seq - 2, sh.seq - 1};
      std::vector<std::vector<double>> ref;
      for (int r : rows)
        ref.push_back(reference_row(hq, hk, hv, sh.seq, sh.d, scale, sh.causal, r));

      AttnParams p{q,        k,        v,      o,      l,     nullptr,  nullptr,
                   sh.batch, sh.heads, sh.seq, sh.seq, scale, sh.causal, 0};
      struct Entry {
        const SweepKernel* k;
        RoleOp op;
        FlashTiling tiling;
        int registers = 0;
        double max_err = 0;
        bool passed = false;
        std::vector<double> times;
        std::string infeasible;  // why the GPU refused the launch (shared memory, ...)
      };
      std::vector<Entry> entries;
      for (const SweepKernel& sk : kernels) {
        if (sk.d != sh.d || (!family.empty() && family != sk.family)) continue;
        Entry e;
        e.k = &sk;
        try {
          sk.make(p, &e.op, &e.tiling, &e.registers);
        } catch (const CudaError& ex) {
          // E.g. static + dynamic shared memory past what a CTA may have: recorded, not fatal.
          e.infeasible = ex.what();
          (void)cudaGetLastError();
          entries.push_back(std::move(e));
          continue;
        }
        // Check: O poisoned with NaN (0xFFFF halves), one run, sampled rows of head 0.
        IOSIM_CUDA_CHECK(cudaMemset(o, 0xFF, elems * 2));
        e.op.launch(stream);
        IOSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
        IOSIM_CUDA_CHECK(cudaMemcpy(ho.data(), o, head * 2, cudaMemcpyDeviceToHost));
        bool finite = true;
        for (size_t i = 0; i < rows.size(); ++i)
          for (int c = 0; c < sh.d; ++c) {
            const float got = __half2float(ho[static_cast<size_t>(rows[i]) * sh.d + c]);
            if (!std::isfinite(got))
              finite = false;
            else
              e.max_err = std::max(e.max_err, std::abs(got - ref[i][c]));
          }
        e.passed = finite && e.max_err < 1e-2;
        entries.push_back(std::move(e));
      }
      for (int set = 1; set <= sets; ++set) {
        std::vector<size_t> order(entries.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::mt19937 rng(static_cast<unsigned>(set) * 7919u + static_cast<unsigned>(sh.seq));
        std::shuffle(order.begin(), order.end(), rng);
        for (size_t i : order) {
          Entry& e = entries[i];
          if (!e.infeasible.empty()) continue;
          e.op.launch(stream);
          IOSIM_CUDA_CHECK(cudaEventRecord(e0, stream));
          e.op.launch(stream);
          IOSIM_CUDA_CHECK(cudaEventRecord(e1, stream));
          IOSIM_CUDA_CHECK(cudaEventSynchronize(e1));
          float one_ms = 0;
          IOSIM_CUDA_CHECK(cudaEventElapsedTime(&one_ms, e0, e1));
          const int reps = std::clamp(static_cast<int>(20.0 / std::max(one_ms, 1e-3f)), 5, 1000);
          IOSIM_CUDA_CHECK(cudaEventRecord(e0, stream));
          for (int r = 0; r < reps; ++r) e.op.launch(stream);
          IOSIM_CUDA_CHECK(cudaEventRecord(e1, stream));
          IOSIM_CUDA_CHECK(cudaEventSynchronize(e1));
          float ms = 0;
          IOSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
          e.times.push_back(ms * 1e-3 / reps);
        }
      }
      for (const Entry& e : entries) {
        out << (first_run ? "\n" : ",\n") << "{\"shape\": ";
        first_run = false;
        json_string(out, sh.name);
        out << ", \"d\": " << sh.d << ", \"seq\": " << sh.seq << ", \"batch\": " << sh.batch
            << ", \"heads\": " << sh.heads << ", \"causal\": " << (sh.causal ? "true" : "false")
            << ", \"family\": ";
        json_string(out, e.k->family);
        out << ", \"kernel\": ";
        json_string(out, e.op.kernel);
        if (!e.infeasible.empty()) {
          out << ", \"block_q\": " << e.k->block_q << ", \"block_kv\": " << e.k->block_kv
              << ", \"stages\": " << e.k->stages << ", \"warps\": " << e.k->warps
              << ", \"infeasible\": ";
          json_string(out, e.infeasible.substr(0, e.infeasible.find(" failed at")));
          out << ", \"times_s\": []}";
          continue;
        }
        out << ", \"block_q\": " << e.k->block_q << ", \"block_kv\": " << e.k->block_kv
            << ", \"stages\": " << e.k->stages << ", \"warps\": " << e.k->warps
            << ", \"threads\": " << e.tiling.threads
            << ", \"registers_per_thread\": " << e.registers
            << ", \"local_bytes_per_thread\": " << e.op.local_bytes_per_thread
            << ", \"smem_dynamic_bytes\": " << e.op.smem_bytes
            << ", \"smem_static_bytes\": " << e.op.static_smem_bytes << ", \"grid\": ["
            << e.op.grid[0] << ", " << e.op.grid[1] << ", " << e.op.grid[2]
            << "], \"check\": {\"max_abs_error\": " << e.max_err
            << ", \"passed\": " << (e.passed ? "true" : "false") << "}, \"times_s\": [";
        for (size_t i = 0; i < e.times.size(); ++i) out << (i ? ", " : "") << e.times[i];
        out << "]}";
      }
      out.flush();
      cudaFree(q);
      cudaFree(k);
      cudaFree(v);
      cudaFree(o);
      cudaFree(l);
      std::fprintf(stderr, "shape %s: %zu configurations\n", sh.name.c_str(), entries.size());
    }
    out << "\n]}\n";
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "iosim_tile_sweep: %s\n", ex.what());
    return 1;
  }
  return 0;
}
