#pragma once
// Several kernels on one problem, side by side (`iosim run` with several --algo or --kernel,
// `iosim.compare` in Python): every flag but the kernel is shared, each kernel runs exactly as its
// own `iosim run` would, so each column of a comparison is that kernel's single run.
#include <string>
#include <vector>

#include "api/iosim.hpp"
#include "api/run_flags.hpp"

namespace iosim {

/// One kernel of a comparison as typed: a built-in algorithm's name (--algo) or a kernel
/// description (--kernel: a YAML file, a preset's name, or inline "{...}").
struct ComparedKernel {
  bool description = false;
  std::string text;
};

/// The kernels one --algo or --kernel value names: the value split at its commas
/// ("flash2,flash3"), except an inline description ("{...}") or an existing file, each one kernel
/// whatever commas it holds. Throws ConfigError for an empty name in a list ("flash2,,flash3").
std::vector<ComparedKernel> split_kernel_list(const std::string& value, bool description);

/// The requests of a comparison: `shared` with each kernel in turn in place of its --algo and
/// --kernel, each checked against `profile` as simulate() checks one before any runs, so that a
/// bad kernel stops the comparison before the first simulation. Every flag applies to every
/// kernel as it would to that kernel's own run: a flag that a kernel does not take (--pattern
/// beside flash2) is refused with a ConfigError naming the kernel, never applied to some columns
/// and dropped from others. Two kernels of one name (flash2 twice; --algo flash2 beside
/// --kernel flash2) are refused: a column is known by its name.
std::vector<RunRequest> compare_requests(const HardwareProfile& profile, const RunFlags& shared,
                                         const std::vector<ComparedKernel>& kernels);

/// simulate() of each request, in order.
std::vector<Report> compare(const HardwareProfile& profile,
                            const std::vector<RunRequest>& requests);

}  // namespace iosim
