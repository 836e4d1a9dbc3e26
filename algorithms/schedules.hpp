#pragma once
// Factories of the built-in algorithms; each lives in its own file.
#include <memory>

#include "algorithms/algorithm.hpp"

namespace iosim {

std::unique_ptr<Algorithm> make_standard_algorithm();  // standard.cpp
std::unique_ptr<Algorithm> make_flash1_algorithm();    // flash1.cpp
std::unique_ptr<Algorithm> make_flash2_algorithm();    // flash2.cpp
std::unique_ptr<Algorithm> make_block_sparse_algorithm();  // block_sparse.cpp
std::unique_ptr<Algorithm> make_flash_decoding_algorithm();  // flash_decoding.cpp
std::unique_ptr<Algorithm> make_paged_algorithm();           // paged.cpp

}  // namespace iosim
