// The Python module iosim._iosim: run, sweep, kvcache, layer and validate over the C++ library,
// in-process. Flags are run's, kvcache's and layer's (the tables of api/run_flags.hpp,
// api/kvcache_flags.hpp and api/layer_flags.hpp, which the CLI reads its flags with too, so their
// checks and defaults are the CLI's), given as a dict keyed by the flag's name without dashes
// (seq_kv for --seq-kv). Documents come back as the JSON text the CLI prints;
// python/iosim/__init__.py turns them into dicts and this module's errors into iosim.ConfigError
// (bad input) and iosim.InternalError (a bug).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "api/compare.hpp"
#include "api/kvcache_flags.hpp"
#include "api/layer_flags.hpp"
#include "api/run_flags.hpp"
#include "api/schema_version.hpp"
#include "api/sweep.hpp"
#include "api/tune.hpp"
#include "api/validation.hpp"
#include "reports/compare_writers.hpp"
#include "reports/kvcache_writers.hpp"
#include "reports/layer_writers.hpp"
#include "reports/tune_writers.hpp"
#include "reports/validation_writers.hpp"
#include "reports/writers.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/json_text.hpp"
#include "sim/base/memory_budget.hpp"
#include "sim/base/run_control.hpp"
#include "sim/base/suggest.hpp"
#include "sim/base/version.hpp"
#include "sim/hardware/profile_overrides.hpp"

namespace py = pybind11;
using namespace iosim;

namespace {

// "seq_kv" -> "--seq-kv" and back: Python's keyword arguments are the flags without dashes.
std::string flag_of(const std::string& key) {
  std::string name = "--" + key;
  for (char& c : name) c = c == '_' ? '-' : c;
  return name;
}

std::string key_of(const std::string& flag) {
  std::string key = flag.substr(2);
  for (char& c : key) c = c == '-' ? '_' : c;
  return key;
}

// The Python type a field of type T takes, for messages.
template <class T>
constexpr const char* python_type() {
  if constexpr (std::is_same_v<T, bool>) {
    return "bool";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "str";
  } else if constexpr (std::is_floating_point_v<T>) {
    return "float or int";
  } else if constexpr (std::is_unsigned_v<T>) {
    return "int >= 0";
  } else {
    return "int";
  }
}

// A str as the CLI takes a flag's text: '' is refused as `--kernel ""` is (it ran the default,
// kernel='' a flash2 run), and a NUL byte, which no command line can hold, is refused where the C
// string of a path or name would end at it (validate('f.json\x00junk') read f.json; issue #50
// S4 and S6).
void check_text(const std::string& key, const std::string& text) {
  if (text.empty()) {
    throw ConfigError(
        fmt::format("{}='': an empty value; give one, or leave the keyword out", key));
  }
  if (text.find('\0') != std::string::npos) {
    throw ConfigError(fmt::format("{}: the text holds a NUL byte ('\\x00')", key));
  }
}

// Sets f.*field from the Python value `v` of keyword `key`, as strictly as the CLI reads its
// flags: None is no value (leave the keyword out for the default), a bool is not a number
// (seq=True was N = 1) and a number not a bool (causal=None passed as false), no float for an
// integer, no negative for an unsigned one. The message names the type expected.
template <class Flags, class Field>
void set_field(Flags& f, Field field, const std::string& key, const py::handle& v) {
  using T = std::remove_cvref_t<decltype(f.*field)>;
  using V = std::conditional_t<std::is_same_v<T, std::optional<std::int64_t>>, std::int64_t, T>;
  const auto wrong = [&] {
    return ConfigError(fmt::format(
        "{}={} has the wrong type: expected {}, got {}", key, py::cast<std::string>(py::repr(v)),
        python_type<V>(), py::cast<std::string>(py::str(py::type::of(v).attr("__name__")))));
  };
  if (v.is_none()) {
    throw ConfigError(fmt::format("{}=None: give a {} (leave the keyword out for the default)", key,
                                  python_type<V>()));
  }
  const bool is_bool = py::isinstance<py::bool_>(v);
  if constexpr (std::is_same_v<V, bool>) {
    if (!is_bool) throw wrong();
  } else if constexpr (std::is_same_v<V, std::string>) {
    if (!py::isinstance<py::str>(v)) throw wrong();
    check_text(key, py::cast<std::string>(v));
  } else if constexpr (std::is_floating_point_v<V>) {
    if (is_bool || !(py::isinstance<py::float_>(v) || py::isinstance<py::int_>(v))) throw wrong();
  } else {
    if (is_bool || !py::isinstance<py::int_>(v)) throw wrong();
  }
  try {
    f.*field = py::cast<V>(v);
  } catch (const py::cast_error&) {
    // An int out of the field's range (a negative for an unsigned one). Where the flag has a fixed
    // range, name it: "has the wrong type: expected int, got int" said nothing.
    if constexpr (std::is_integral_v<V> && std::is_signed_v<V> && !std::is_same_v<V, bool>) {
      if (py::isinstance<py::int_>(v) && !is_bool) {
        const std::optional<std::pair<std::int64_t, std::int64_t>> range =
            std::is_same_v<Flags, LayerFlags>     ? layer_flag_range(flag_of(key))
            : std::is_same_v<Flags, KvCacheFlags> ? kvcache_flag_range(flag_of(key))
                                                  : problem_flag_range(flag_of(key));
        const auto [lo, hi] = range.value_or(std::pair<std::int64_t, std::int64_t>{
            std::numeric_limits<V>::min(), std::numeric_limits<V>::max()});
        throw ConfigError(fmt::format("{}={} is out of range: it must be in [{}, {}]", key,
                                      py::cast<std::string>(py::repr(v)), lo, hi));
      }
    }
    throw wrong();
  }
}

// The flag of `table` (whose entries have .name and .field) that keyword `key` names; throws
// ConfigError naming the keywords of `table` and `extra` when there is none.
template <class Table>
const typename Table::value_type& find_flag(const Table& table, const std::string& key,
                                            const std::vector<std::string>& extra) {
  for (const auto& flag : table) {
    if (flag.name == flag_of(key)) return flag;
  }
  std::vector<std::string> known = extra;
  for (const auto& flag : table) known.push_back(key_of(flag.name));
  throw ConfigError(fmt::format("unknown flag '{}'{}", key, did_you_mean(key, known)));
}

bool is_list(const py::handle v) {
  return py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v);
}

// A ragged batch's lengths (run's seq_lens, layer's seq_lens and context_lens) as a list of
// ints, typed as the CLI's comma list ("," for an empty list, which the parser refuses).
std::string lengths_text(const std::string& key, const py::handle v) {
  std::string text;
  for (const py::handle x : v) {
    if (py::isinstance<py::bool_>(x) || !py::isinstance<py::int_>(x)) {
      throw ConfigError(fmt::format("{}={} has the wrong type: expected a list of ints", key,
                                    py::cast<std::string>(py::repr(v))));
    }
    if (!text.empty()) text += ',';
    text += py::cast<std::string>(py::str(x));
  }
  return text.empty() ? "," : text;
}

// Sets the RunFlags field of each key of `flags` ("seq_kv" -> --seq-kv); "set" is the list of
// --set KEY=VALUE texts.
RunFlags to_flags(const py::dict& flags) {
  RunFlags f;
  for (const auto& item : flags) {
    // Not a structured binding: the lambda below cannot name one under clang 14.
    const py::handle k = item.first;
    const py::handle v = item.second;
    const std::string key = py::str(k);
    if (key == "set") {
      try {
        f.set = py::isinstance<py::str>(v) ? std::vector<std::string>{py::cast<std::string>(v)}
                                           : py::cast<std::vector<std::string>>(v);
      } catch (const py::cast_error&) {
        throw ConfigError(
            fmt::format("set={} has the wrong type: expected a str \"KEY=VALUE\" or a list of them",
                        py::cast<std::string>(py::repr(v))));
      }
      for (const std::string& o : f.set) check_text("set", o);
      continue;
    }
    if ((key == "seq_lens" || key == "seq_kv_lens") && is_list(v)) {
      (key == "seq_lens" ? f.seq_lens : f.seq_kv_lens) = lengths_text(key, v);
      continue;
    }
    const ProblemFlag& flag = find_flag(problem_flags(), key, {"set"});
    std::visit([&](auto field) { set_field(f, field, key, v); }, flag.field);
  }
  // As the CLI: a kernel description runs in place of the algorithm, so giving both is a mistake
  // (kernel=..., algo=... ran the kernel and dropped algo without a word).
  if (flags.contains("kernel") && flags.contains("algo")) {
    throw ConfigError(fmt::format(
        "kernel= and algo='{}': give one of them; kernel= runs its description in place of algo",
        f.algorithm));
  }
  // As the CLI's --seq (it said "--seq 0 is out of range" when left out).
  if (!flags.contains("seq") && !flags.contains("seq_lens")) {
    throw ConfigError(
        "seq is required: the query length N (e.g. seq=4096), or seq_lens=[...] for a ragged "
        "batch");
  }
  return f;
}

// The calls running now (their library work, the GIL released) and whether the interpreter is
// exiting. At exit Python ends a daemon thread that takes the GIL back by unwinding it, and an
// unwinding through a call's C++ frames (the destructor that takes the GIL back) called
// std::terminate: "terminate called without an active exception", an abort and a core dump, for
// a script that ended (Ctrl-C included) while a daemon thread ran iosim (issue #50's sixth probe).
// close_for_exit(), called at exit before that (atexit), stops those calls, waits for them to
// hand the GIL back, and refuses new ones; each ends its thread with SystemExit, which the thread
// ends on without a traceback, as a daemon thread ends at exit.
std::atomic<int> g_calls{0};
std::atomic<bool> g_closing{false};

void close_for_exit() {
  g_closing.store(true);
  if (g_calls.load() == 0) return;
  run_control::request_stop(0);
  const py::gil_scoped_release release;  // (they take it back as they end)
  for (int waited_ms = 0; g_calls.load() > 0 && waited_ms < 10000; waited_ms += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Ctrl-C during a long call. Python's own SIGINT handler only sets a flag that Python reads once
// the call returns, so a run of minutes ignored it. While a call made on the main thread runs,
// SIGINT asks iosim's runs to stop instead (run_control), which ends the call with
// KeyboardInterrupt within about a second; Python's handler is put back when the call ends.
// Other threads (a Dask worker's) leave the handlers alone: signals reach the main thread.
// Made with the GIL held, and ended after the call has taken it back (it outlives the call's
// gil_scoped_release): what close_for_exit() counts.
class InterruptibleCall {
 public:
  InterruptibleCall() {
    if (g_closing.load()) {
      throw Stopped("the Python interpreter is exiting: iosim takes no more calls");
    }
    run_control::clear_stop();  // a stop of an earlier call is not this call's
    const py::module_ threading = py::module_::import("threading");
    if (threading.attr("current_thread")().is(threading.attr("main_thread")())) {
      struct sigaction stop {};
      stop.sa_handler = [](int sig) { run_control::request_stop(sig); };
      sigemptyset(&stop.sa_mask);
      installed_ = sigaction(SIGINT, &stop, &previous_) == 0;
    }
    g_calls.fetch_add(1);  // last: a constructor that throws has no destructor call
  }
  ~InterruptibleCall() {
    if (installed_) sigaction(SIGINT, &previous_, nullptr);
    g_calls.fetch_sub(1);
  }
  InterruptibleCall(const InterruptibleCall&) = delete;
  InterruptibleCall& operator=(const InterruptibleCall&) = delete;

 private:
  struct sigaction previous_ {};
  bool installed_ = false;
};

std::string run_json(const py::dict& flags) {
  const RunFlags f = to_flags(flags);
  const RunRequest request = to_request(f);
  const HardwareProfile profile = load_profile(f.profile, parse_profile_overrides(f.set));
  const InterruptibleCall interruptible;
  py::gil_scoped_release release;
  return json_text(report_to_json(simulate(profile, request)));
}

// `iosim run --format json` of several kernels side by side (`iosim run --algo A,B --kernel K`):
// `flags` are the shared flags (no algo or kernel), `algos` and `kernels` the kernels, each
// entry a name or a comma list as on the command line; the algorithms first, then the
// descriptions.
std::string compare_json(const py::dict& flags, const std::vector<std::string>& algos,
                         const std::vector<std::string>& kernels) {
  for (const char* key : {"algo", "kernel"}) {
    if (flags.contains(key)) throw InternalError("compare_json: algo and kernel come as lists");
  }
  const RunFlags f = to_flags(flags);
  std::vector<ComparedKernel> list;
  for (const auto& [values, description] : {std::pair{&algos, false}, std::pair{&kernels, true}}) {
    for (const std::string& v : *values) {
      for (ComparedKernel& k : split_kernel_list(v, description)) list.push_back(std::move(k));
    }
  }
  if (list.size() < 2) {
    throw ConfigError(fmt::format(
        "compare() needs two kernels or more (algo= and kernel= name {}); run() runs one",
        list.size()));
  }
  const HardwareProfile profile = load_profile(f.profile, parse_profile_overrides(f.set));
  const std::vector<RunRequest> requests = compare_requests(profile, f, list);
  const InterruptibleCall interruptible;
  py::gil_scoped_release release;
  return json_text(compare_to_json(compare(profile, requests)));
}

// One report per dict of `points`, on `jobs` threads (0: all cores), in the order given.
std::vector<std::string> sweep_json_rows(const std::vector<py::dict>& points, int jobs) {
  if (jobs < 0) {
    throw ConfigError(
        fmt::format("jobs={}: give 0 (all cores) or a positive number of threads", jobs));
  }
  // A Ctrl-C while the points are read stops the call too (the loop holds the GIL, so Python's
  // own handler could not run until it ended).
  const InterruptibleCall interruptible;
  std::map<std::string, HardwareProfile> profiles;
  std::vector<SweepPoint> sweep_points;
  for (std::size_t i = 0; i < points.size(); ++i) {
    // max_seconds= and a signal hold while the points are read too (the seventh probe: two
    // million points took a minute before the budget was first checked).
    run_control::check();
    const RunFlags f = to_flags(points[i]);
    std::string key = f.profile;
    for (const std::string& o : f.set) key += " --set " + o;
    if (profiles.count(key) == 0 && profiles.size() >= kMaxWhatIfProfiles) {
      throw ConfigError(fmt::format(
          "the points' profile and set= values make more than {} profiles (each loaded and held "
          "before the first point): give fewer, or sweep them in several calls",
          kMaxWhatIfProfiles));
    }
    if (profiles.count(key) == 0) {
      profiles.emplace(key, load_profile(f.profile, parse_profile_overrides(f.set)));
    }
    sweep_points.push_back({i, key, to_request(f)});
  }
  SweepOptions options;
  options.jobs = jobs;
  std::vector<Report> reports;
  {
    py::gil_scoped_release release;
    reports = run_sweep(sweep_points, profiles, options);
  }
  std::vector<std::string> rows;
  for (const Report& r : reports) rows.push_back(json_text(report_to_json(r)));
  return rows;
}

// `iosim kvcache --format json`'s document for the flags of `flags` ("kv_heads" -> --kv-heads).
std::string kvcache_json(const py::dict& flags) {
  KvCacheFlags f;
  std::set<std::string> given;
  for (const auto& item : flags) {
    // Not a structured binding: the lambda below cannot name one under clang 14.
    const py::handle k = item.first;
    const py::handle v = item.second;
    const std::string key = py::str(k);
    const KvCacheFlag& flag = find_flag(kvcache_flags(), key, {});
    std::visit([&](auto field) { set_field(f, field, key, v); }, flag.field);
    given.insert(flag.name);
  }
  const InterruptibleCall interruptible;
  py::gil_scoped_release release;
  return json_text(kvcache_to_json(run_kvcache(f, given)));
}

// `iosim layer --format json`'s document for the flags of `flags` ("sm_clock_mhz" ->
// --sm-clock-mhz).
std::string layer_json(const py::dict& flags) {
  LayerFlags f;
  std::set<std::string> given;
  for (const auto& item : flags) {
    // Not a structured binding: the lambda below cannot name one under clang 14.
    const py::handle k = item.first;
    const py::handle v = item.second;
    const std::string key = py::str(k);
    const LayerFlag& flag = find_flag(layer_flags(), key, {});
    given.insert(flag.name);
    // A mixed step's lengths: a list of ints as run's seq_lens, or the CLI's comma text.
    if ((key == "seq_lens" || key == "context_lens") && is_list(v)) {
      (key == "seq_lens" ? f.seq_lens : f.context_lens) = lengths_text(key, v);
      continue;
    }
    std::visit([&](auto field) { set_field(f, field, key, v); }, flag.field);
  }
  const InterruptibleCall interruptible;
  py::gil_scoped_release release;
  return json_text(layer_to_json(run_layer(f, given)));
}

// `iosim tune --format json` for `flags` (run's problem flags) and the tile lists given (an
// empty list: the axis's default space, as a flag left out).
std::string tune_json(const py::dict& flags, const std::vector<std::int64_t>& block_q,
                      const std::vector<std::int64_t>& block_kv, const std::vector<int>& stages,
                      const std::vector<int>& threads, double tie_band_pct, std::int64_t top,
                      int jobs) {
  for (const char* axis : {"block_q", "block_kv", "stages", "threads"}) {
    if (flags.contains(axis)) {
      throw ConfigError(fmt::format(
          "tune: {} is an axis of the space: pass it as a list, {}=[...], to tune()", axis, axis));
    }
  }
  if (!(tie_band_pct >= 0 && tie_band_pct <= 100)) {
    throw ConfigError(
        fmt::format("tie_band={} is out of range: it must be in [0, 100] (percent)", tie_band_pct));
  }
  if (top < 0) throw ConfigError(fmt::format("top={} must be 0 (all) or more", top));
  if (jobs < 0 || jobs > kMaxSweepJobs) {
    throw ConfigError(fmt::format("jobs={} is out of range: it must be in [1, {}] (0: all cores)",
                                  jobs, kMaxSweepJobs));
  }
  const RunFlags f = to_flags(flags);
  const RunRequest base = to_request(f);
  const HardwareProfile profile = load_profile(f.profile, parse_profile_overrides(f.set));
  TuneSpace space = default_tune_space(profile, base);
  if (!block_q.empty()) space.block_q = block_q;
  if (!block_kv.empty()) space.block_kv = block_kv;
  if (!stages.empty()) space.stages = stages;
  if (!threads.empty()) space.threads = threads;
  TuneOptions options;
  options.tie_band = tie_band_pct / 100.0;
  options.jobs = jobs;
  const InterruptibleCall interruptible;
  py::gil_scoped_release release;
  return json_text(
      tune_to_json(tune(profile, base, space, options), static_cast<std::size_t>(top)));
}

std::string validate_json(const std::string& path, const std::string& profile) {
  check_text("path", path);
  if (!profile.empty()) check_text("profile", profile);  // '': the measurements' own profile
  const InterruptibleCall interruptible;
  py::gil_scoped_release release;
  return validation_json(validate_measurements(path, profile));
}

// run(), sweep() and tune()'s max_seconds= and max_memory=, the CLI's --max-seconds and
// --max-memory (they were "unknown flag"s, issue #50 M4): set for one call by the package and
// put back (0 and "": none, the default) when it ends. The calling thread's (run_control,
// memory_budget): a call on another thread neither shares nor clears them.
void set_limits(double seconds, const std::string& memory) {
  if (!(seconds >= 0)) throw ConfigError(fmt::format("max_seconds={} must be >= 0", seconds));
  const std::uint64_t bytes =
      memory.empty() ? 0 : memory_budget::parse_size(memory, "max_memory");  // names it
  run_control::set_budget(seconds, "max_seconds");
  memory_budget::set_bytes(bytes, "max_memory");
}

}  // namespace

PYBIND11_MODULE(_iosim, m) {
  m.doc() = "iosim's C++ library (use the iosim package, not this module)";
  static py::exception<ConfigError> config_error(m, "ConfigError", PyExc_ValueError);
  static py::exception<InternalError> internal_error(m, "InternalError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ConfigError& e) {
      config_error(e.what());
    } catch (const InternalError& e) {
      internal_error(e.what());
    } catch (const Stopped& e) {
      // A spent max_seconds is not the user's Ctrl-C: TimeoutError, which Python has for it.
      // At exit: SystemExit (close_for_exit()).
      const bool budget = std::string(e.what()).rfind("stopped: the time budget", 0) == 0;
      PyErr_SetString(g_closing.load() ? PyExc_SystemExit
                      : budget         ? PyExc_TimeoutError
                                       : PyExc_KeyboardInterrupt,
                      e.what());
    }
  });
  m.def("run_json", &run_json, "one run as `iosim run --format json` prints it");
  m.def("compare_json", &compare_json, py::arg("flags"), py::arg("algos"), py::arg("kernels"),
        "several kernels side by side as `iosim run --algo A,B --format json` prints them");
  m.def("sweep_json_rows", &sweep_json_rows, py::arg("points"), py::arg("jobs") = 0,
        "one run per dict of flags, on threads; each as run_json's text");
  m.def("kvcache_json", &kvcache_json, "`iosim kvcache --format json` for a dict of its flags");
  m.def("layer_json", &layer_json, "`iosim layer --format json` for a dict of its flags");
  m.def("tune_json", &tune_json, py::arg("flags"), py::arg("block_q"), py::arg("block_kv"),
        py::arg("stages"), py::arg("threads"), py::arg("tie_band"), py::arg("top"), py::arg("jobs"),
        "`iosim tune --format json`: flags and the tile lists");
  m.def("validate_json", &validate_json, py::arg("path"), py::arg("profile") = "",
        "`iosim validate PATH --format json`");
  m.def("set_limits", &set_limits, py::arg("seconds"), py::arg("memory"),
        "max_seconds and max_memory for the calls that follow (0 and '': none)");
  m.def("close_for_exit", &close_for_exit,
        "at exit: stop the calls running on other threads, wait for them, refuse new ones");
  m.def("profile_names", &builtin_profile_names, "the built-in profiles");
  m.attr("__version__") = std::string(version_number());
  m.attr("version_text") = std::string(version_text());
  m.attr("schema_version") = kSchemaVersion;
  m.attr("default_tie_band_pct") = TuneOptions{}.tie_band * 100.0;
  // sweep()'s limit: its points and rows are Python objects held together (~2 KB a point), where
  // `iosim sweep --out` streams up to kMaxSweepPoints.
  m.attr("max_sweep_points") = kMaxAxisValues;
}
