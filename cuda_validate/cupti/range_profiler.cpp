#include "range_profiler.hpp"

#include <stdexcept>

#ifdef IOSIM_HAVE_CUPTI
#include <cuda.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include <cstdint>
#endif

namespace iosim_cuda {

#ifdef IOSIM_HAVE_CUPTI
namespace {

// CUPTI's parameter structs: zeroed, with the size of the layout we were compiled with
// (IOSIM_CUPTI_PARAMS(T): T's size is the constant T_STRUCT_SIZE).
template <typename T>
T cupti_params(std::size_t struct_size) {
  T p{};
  p.structSize = struct_size;
  return p;
}
#define IOSIM_CUPTI_PARAMS(T) cupti_params<T>(T##_STRUCT_SIZE)

void cupti_check(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  throw std::runtime_error(std::string(call) + " failed: " + (text ? text : "unknown error") +
                           " (CUptiResult " + std::to_string(static_cast<int>(r)) + ")");
}

void cu_check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* text = nullptr;
  cuGetErrorString(r, &text);
  throw std::runtime_error(std::string(call) + " failed: " + (text ? text : "unknown error"));
}

// A replay session must not stay enabled when a pass throws: the next case
// would find the context still claimed by the profiler.
struct EnabledRange {
  CUpti_RangeProfiler_Object* object = nullptr;
  ~EnabledRange() {
    if (!object) return;
    auto p = IOSIM_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params);
    p.pRangeProfilerObject = object;
    cuptiRangeProfilerDisable(&p);
  }
};

// Passes beyond which a range is abandoned (our metric set needs a handful).
constexpr int kMaxPasses = 64;

}  // namespace

struct RangeProfiler::Impl {
  CUcontext ctx = nullptr;
  std::string chip;
  std::vector<std::uint8_t> availability;
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<std::string> metrics, unavailable;
  std::vector<const char*> metric_ptrs;
  std::vector<std::uint8_t> config;
  int passes = 0;
  bool initialized = false;
};

RangeProfiler::RangeProfiler(const std::vector<std::string>& metrics)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  cu_check(cuCtxGetCurrent(&s.ctx), "cuCtxGetCurrent");
  if (!s.ctx) throw std::runtime_error("RangeProfiler: no current CUDA context");
  CUdevice device = 0;
  cu_check(cuCtxGetDevice(&device), "cuCtxGetDevice");

  auto init = IOSIM_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
  cupti_check(cuptiProfilerInitialize(&init), "cuptiProfilerInitialize");
  s.initialized = true;

  auto chip = IOSIM_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  chip.deviceIndex = static_cast<std::size_t>(device);
  cupti_check(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName");
  s.chip = chip.pChipName ? chip.pChipName : "";

  // Which counters this context can read now (none when profiling is restricted
  // to administrators: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES surfaces here).
  auto avail = IOSIM_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
  avail.ctx = s.ctx;
  cupti_check(cuptiProfilerGetCounterAvailability(&avail),
              "cuptiProfilerGetCounterAvailability (size)");
  s.availability.resize(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = s.availability.data();
  cupti_check(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");

  auto host = IOSIM_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = s.chip.c_str();
  host.pCounterAvailabilityImage = s.availability.data();
  cupti_check(cuptiProfilerHostInitialize(&host), "cuptiProfilerHostInitialize");
  s.host = host.pHostObject;

  // A name the host does not know would fail the whole configuration: drop it and say so.
  for (const std::string& m : metrics) {
    auto prop = IOSIM_CUPTI_PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params);
    prop.pHostObject = s.host;
    prop.pMetricName = m.c_str();
    (cuptiProfilerHostGetMetricProperties(&prop) == CUPTI_SUCCESS ? s.metrics : s.unavailable)
        .push_back(m);
  }
  if (s.metrics.empty()) throw std::runtime_error("RangeProfiler: none of the metrics is offered");
  for (const std::string& m : s.metrics) s.metric_ptrs.push_back(m.c_str());

  auto add = IOSIM_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
  add.pHostObject = s.host;
  add.ppMetricNames = s.metric_ptrs.data();
  add.numMetrics = s.metric_ptrs.size();
  cupti_check(cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");

  auto size = IOSIM_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  size.pHostObject = s.host;
  cupti_check(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
  s.config.resize(size.configImageSize);
  auto image = IOSIM_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  image.pHostObject = s.host;
  image.configImageSize = s.config.size();
  image.pConfigImage = s.config.data();
  cupti_check(cuptiProfilerHostGetConfigImage(&image), "cuptiProfilerHostGetConfigImage");

  auto passes = IOSIM_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
  passes.configImageSize = s.config.size();
  passes.pConfigImage = s.config.data();
  cupti_check(cuptiProfilerHostGetNumOfPasses(&passes), "cuptiProfilerHostGetNumOfPasses");
  s.passes = static_cast<int>(passes.numOfPasses);
}

RangeProfiler::~RangeProfiler() {
  if (impl_->host) {
    auto p = IOSIM_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
    p.pHostObject = impl_->host;
    cuptiProfilerHostDeinitialize(&p);
  }
  if (impl_->initialized) {
    auto p = IOSIM_CUPTI_PARAMS(CUpti_Profiler_DeInitialize_Params);
    cuptiProfilerDeInitialize(&p);
  }
}

RangeCounters RangeProfiler::profile(const std::string& name,
                                     const std::function<void()>& before_pass,
                                     const std::function<void()>& launch) {
  Impl& s = *impl_;
  // One range per session: a fresh counter-data image, configured, replayed, decoded.
  EnabledRange session;
  auto enable = IOSIM_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params);
  enable.ctx = s.ctx;
  cupti_check(cuptiRangeProfilerEnable(&enable), "cuptiRangeProfilerEnable");
  session.object = enable.pRangeProfilerObject;

  auto size = IOSIM_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
  size.pRangeProfilerObject = session.object;
  size.pMetricNames = s.metric_ptrs.data();
  size.numMetrics = s.metric_ptrs.size();
  size.maxNumOfRanges = 1;
  size.maxNumRangeTreeNodes = 1;
  cupti_check(cuptiRangeProfilerGetCounterDataSize(&size), "cuptiRangeProfilerGetCounterDataSize");
  std::vector<std::uint8_t> data(size.counterDataSize);
  auto init = IOSIM_CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  init.pRangeProfilerObject = session.object;
  init.counterDataSize = data.size();
  init.pCounterData = data.data();
  cupti_check(cuptiRangeProfilerCounterDataImageInitialize(&init),
              "cuptiRangeProfilerCounterDataImageInitialize");

  auto config = IOSIM_CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
  config.pRangeProfilerObject = session.object;
  config.configSize = s.config.size();
  config.pConfig = s.config.data();
  config.counterDataImageSize = data.size();
  config.pCounterDataImage = data.data();
  // User range + user replay: the range holds exactly the caller's launch, and the
  // caller's before_pass (the L2 flush) runs before every pass, outside it.
  config.range = CUPTI_UserRange;
  config.replayMode = CUPTI_UserReplay;
  config.maxRangesPerPass = 1;
  config.numNestingLevels = 1;
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  cupti_check(cuptiRangeProfilerSetConfig(&config), "cuptiRangeProfilerSetConfig");

  RangeCounters out;
  bool all_submitted = false;
  while (!all_submitted) {
    if (out.passes >= kMaxPasses)
      throw std::runtime_error("RangeProfiler: range '" + name + "' not complete after " +
                               std::to_string(kMaxPasses) + " passes");
    before_pass();
    cu_check(cuCtxSynchronize(), "cuCtxSynchronize (before the range)");
    auto start = IOSIM_CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params);
    start.pRangeProfilerObject = session.object;
    cupti_check(cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart");
    auto push = IOSIM_CUPTI_PARAMS(CUpti_RangeProfiler_PushRange_Params);
    push.pRangeProfilerObject = session.object;
    push.pRangeName = name.c_str();
    cupti_check(cuptiRangeProfilerPushRange(&push), "cuptiRangeProfilerPushRange");
    launch();
    cu_check(cuCtxSynchronize(), "cuCtxSynchronize (in the range)");
    auto pop = IOSIM_CUPTI_PARAMS(CUpti_RangeProfiler_PopRange_Params);
    pop.pRangeProfilerObject = session.object;
    cupti_check(cuptiRangeProfilerPopRange(&pop), "cuptiRangeProfilerPopRange");
    auto stop = IOSIM_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
    stop.pRangeProfilerObject = session.object;
    cupti_check(cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop");
    all_submitted = stop.isAllPassSubmitted != 0;
    ++out.passes;
  }

  auto decode = IOSIM_CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
  decode.pRangeProfilerObject = session.object;
  cupti_check(cuptiRangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData");
  if (decode.numOfRangeDropped != 0)
    throw std::runtime_error("RangeProfiler: CUPTI dropped range '" + name + "'");

  auto info = IOSIM_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
  info.pCounterDataImage = data.data();
  info.counterDataImageSize = data.size();
  cupti_check(cuptiRangeProfilerGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo");
  if (info.numTotalRanges < 1)
    throw std::runtime_error("RangeProfiler: no range recorded for '" + name + "'");

  auto range = IOSIM_CUPTI_PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params);
  range.pCounterDataImage = data.data();
  range.counterDataImageSize = data.size();
  range.rangeIndex = 0;
  range.rangeDelimiter = "/";
  cupti_check(cuptiRangeProfilerCounterDataGetRangeInfo(&range),
              "cuptiRangeProfilerCounterDataGetRangeInfo");
  out.range_name = range.rangeName ? range.rangeName : "";

  std::vector<double> values(s.metric_ptrs.size());
  auto eval = IOSIM_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
  eval.pHostObject = s.host;
  eval.pCounterDataImage = data.data();
  eval.counterDataImageSize = data.size();
  eval.rangeIndex = 0;
  eval.ppMetricNames = s.metric_ptrs.data();
  eval.numMetrics = s.metric_ptrs.size();
  eval.pMetricValues = values.data();
  cupti_check(cuptiProfilerHostEvaluateToGpuValues(&eval), "cuptiProfilerHostEvaluateToGpuValues");
  for (std::size_t i = 0; i < values.size(); ++i) out.values.emplace_back(s.metrics[i], values[i]);
  return out;
}

bool RangeProfiler::compiled_in() {
  return true;
}

#else  // built without CUPTI headers: the runner's --mode cupti reports this

// The fields the accessors below read, all empty.
struct RangeProfiler::Impl {
  std::vector<std::string> metrics, unavailable;
  std::string chip;
  int passes = 0;
};

RangeProfiler::RangeProfiler(const std::vector<std::string>&) : impl_(std::make_unique<Impl>()) {
  throw std::runtime_error(
      "iosim_cuda_runner was built without CUPTI (cupti_range_profiler.h not found at configure "
      "time)");
}
RangeProfiler::~RangeProfiler() = default;
RangeCounters RangeProfiler::profile(const std::string&, const std::function<void()>&,
                                     const std::function<void()>&) {
  return {};
}
bool RangeProfiler::compiled_in() {
  return false;
}

#endif

const std::vector<std::string>& RangeProfiler::metrics() const {
  return impl_->metrics;
}
const std::vector<std::string>& RangeProfiler::unavailable() const {
  return impl_->unavailable;
}
const std::string& RangeProfiler::chip() const {
  return impl_->chip;
}
int RangeProfiler::passes_needed() const {
  return impl_->passes;
}

}  // namespace iosim_cuda
