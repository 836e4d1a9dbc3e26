#pragma once
// A user's own Nsight Compute export as a measured case: `iosim validate --ncu FILE.csv --kernel
// DESCRIPTION` compares a kernel description with the counters ncu read from the user's kernel,
// with no need for cuda_validate's JSON format. Both of ncu's CSV layouts are read:
//   ncu --csv --metrics M1,M2,... ./app > FILE.csv               (one row per kernel and metric)
//   ncu --csv --page raw --metrics M1,M2,... ./app > FILE.csv    (one row per kernel, a units row)
// Every kernel in the file is part of the case (filter with ncu's -k or --launch-skip). Values in
// ncu's scaled units (Kbyte, usecond, Ghz, ...) are converted to its base units.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "algorithms/kernel_description.hpp"
#include "sim/schedule/problem.hpp"

namespace iosim {

/// The metrics a case needs, as `ncu --metrics` takes them (docs/kernels.md prints the command).
const std::vector<std::string>& ncu_required_metrics();

struct NcuKernel {
  std::string name;    // "Kernel Name"
  std::string device;  // "Device" (e.g. "NVIDIA H100 80GB HBM3"); empty when not exported
  std::map<std::string, double> metrics;  // base units: byte, sector, nsecond, hz
};

/// The kernels of an ncu CSV export. Throws ConfigError naming `origin` and the line when the
/// text is not such an export, a row's fields are more or fewer than the header's, the details
/// page has no Metric Value column, a required metric is missing, or a value is not a number.
std::vector<NcuKernel> read_ncu_csv(const std::string& text, const std::string& origin);

/// An iosim-measurements document holding one case: `kernel` run on `problem`, the measured
/// kernels, the CUDA-event time the user gives (`time_s`, > 0), ready for validate_document().
nlohmann::json ncu_case_document(const std::vector<NcuKernel>& kernels,
                                 const KernelDescription& kernel, const AttentionProblem& problem,
                                 double time_s, const std::string& origin);

}  // namespace iosim
