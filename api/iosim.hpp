#pragma once
// iosim's public surface in one header: load a GPU profile, describe an attention call, simulate
// it, read the Report. The CLI, the sweep, validation, the tests and the benchmarks include this
// (and the writers of reports/ for output); nothing here prints or exits.
//
//   const iosim::HardwareProfile gpu = iosim::load_profile("h100-sxm5-80gb");
//   iosim::RunRequest r;
//   r.algorithm = "flash2";
//   r.problem.batch = 4; r.problem.heads = 16; r.problem.seq = 4096;  // seq_kv: as seq
//   const iosim::Report report = iosim::simulate(gpu, r);  // report.engine.total.hbm, .time_s
//
// Errors: ConfigError for bad input (its message names the input), InternalError for bugs.
#include "algorithms/algorithm.hpp"           // Registry, builtin_registry(), Tiling
#include "algorithms/kernel_description.hpp"  // KernelDescription, presets
#include "api/simulate.hpp"                   // RunRequest, Report, simulate()
#include "sim/base/errors.hpp"                // ConfigError, InternalError
#include "sim/hardware/profile.hpp"           // HardwareProfile, load_profile()
#include "sim/schedule/problem.hpp"           // AttentionProblem, Pass
