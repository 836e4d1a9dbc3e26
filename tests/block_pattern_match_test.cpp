// The block-sparse kernels in cuda_validate/ visit the blocks of their own host-side copy of
// the pattern rules (cuda_validate/runner/block_pattern.hpp: the device build carries no
// iosim library). A measured case is only comparable with iosim's prediction if both pick the
// same blocks, so this holds the copy to sim/schedule/block_mask.cpp over many shapes and patterns.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <span>

#include "cuda_validate/runner/block_pattern.hpp"
#include "sim/schedule/block_mask.hpp"

using namespace iosim;

TEST_CASE("cuda_validate's block list equals iosim's block mask") {
  const char* patterns[] = {"local:1",      "local:2",          "local:4",    "local:7",
                            "strided:1",    "strided:3",        "strided:4",  "random:0.25:1",
                            "random:0.5:7", "random:0.9:12345", "random:1:0", "causal"};
  struct Shape {
    std::int64_t seq, seq_kv, block_q, block_kv;
  };
  const Shape shapes[] = {{4096, 4096, 128, 64}, {4096, 4096, 128, 128}, {300, 500, 128, 64},
                          {8192, 8192, 128, 64}, {1000, 1000, 64, 64},   {2048, 4096, 128, 64},
                          {1, 777, 16, 64}};
  for (const char* spec : patterns) {
    for (const Shape& s : shapes) {
      for (const bool causal : {false, true}) {
        CAPTURE(spec);
        CAPTURE(s.seq);
        CAPTURE(s.seq_kv);
        CAPTURE(s.block_q);
        CAPTURE(s.block_kv);
        CAPTURE(causal);
        AttentionProblem p;
        p.seq = s.seq;
        p.seq_kv = s.seq_kv;
        p.causal = causal;
        p.pattern = std::make_shared<const BlockPattern>(parse_block_pattern(spec));
        const BlockMask mask(p, s.block_q, s.block_kv);
        const iosim_cuda::BlockList list =
            iosim_cuda::make_block_list(spec, s.seq, s.seq_kv, s.block_q, s.block_kv, causal);
        REQUIRE(list.rows == mask.rows());
        REQUIRE(list.cols == mask.cols());
        CHECK(list.nonzero() == mask.nonzero_blocks());
        bool same = true;
        for (std::int64_t i = 0; i < mask.rows(); ++i) {
          std::int64_t next = list.row_ptr[static_cast<std::size_t>(i)];
          for (std::int64_t j = 0; j < mask.cols(); ++j) {
            const bool in_list = next < list.row_ptr[static_cast<std::size_t>(i + 1)] &&
                                 list.col_idx[static_cast<std::size_t>(next)] == j;
            if (in_list) ++next;
            same = same && in_list == mask.at(i, j) &&
                   (list.dense[static_cast<std::size_t>(i * mask.cols() + j)] != 0) == in_list;
          }
          same = same && next == list.row_ptr[static_cast<std::size_t>(i + 1)];
          // The mask's own list of a row's nonzero blocks (what flash2 walks) is the same.
          const auto begin = list.col_idx.begin() + list.row_ptr[static_cast<std::size_t>(i)];
          const auto end = list.col_idx.begin() + list.row_ptr[static_cast<std::size_t>(i + 1)];
          const std::span<const std::int64_t> row = mask.row_blocks(i);
          same = same && std::equal(row.begin(), row.end(), begin, end);
        }
        CHECK(same);
      }
    }
  }
}

TEST_CASE("cuda_validate's block list refuses what it cannot parse") {
  for (const char* spec : {"local:0", "local:", "strided:x", "random:0.5", "random:1.5:1",
                           "random:0.5:-1", "file:x.txt", "dense"}) {
    CAPTURE(spec);
    CHECK_THROWS_AS(iosim_cuda::make_block_list(spec, 256, 256, 64, 64, false),
                    std::invalid_argument);
  }
}
