#include "kvcache/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <random>
#include <sstream>
#include <string_view>

#include "sim/base/errors.hpp"
#include "sim/base/run_control.hpp"
#include "sim/base/suggest.hpp"
#include "sim/base/text_file.hpp"

namespace iosim::kvcache {
namespace {

// Streams of up to this many sequences (requests x samples) are modelled; beyond it the per-sample
// arrays alone would take gigabytes.
constexpr std::int64_t kMaxSequences = 20'000'000;
constexpr std::int64_t kMaxTokens = 10'000'000;  // per prompt or output
// The latest step a request may arrive at, drawn or traced: far inside an int64 step count (a
// Poisson rate of 1e-300 drew arrivals of 1e300 steps, converted to INT64_MIN, and reported a
// mean latency of -9.2e18 steps).
constexpr double kMaxArrivalStep = 1e15;
// The least Poisson rate: a mean gap of kMaxArrivalStep steps.
constexpr double kMinPoissonRate = 1.0 / kMaxArrivalStep;
constexpr double kMaxPoissonRate = 1e6;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool parse_double(std::string_view s, double& out) {
  s = trim(s);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(out);
}

bool parse_int(std::string_view s, std::int64_t& out) {
  s = trim(s);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) return parts;
    start = pos + 1;
  }
}

// Rounds a draw to a token count in [1, max]; `clamped` is set when the draw was outside.
std::int32_t to_tokens(double x, std::int64_t max, bool& clamped) {
  const double r = std::nearbyint(x);
  if (!(r >= 1.0)) {  // also catches NaN
    clamped = true;
    return 1;
  }
  if (r > static_cast<double>(max)) {
    clamped = true;
    return static_cast<std::int32_t>(max);
  }
  return static_cast<std::int32_t>(r);
}

class Sampler {
 public:
  explicit Sampler(const LengthDist& d) : d_(d) {}
  double operator()(std::mt19937_64& rng) {
    switch (d_.kind) {
      case LengthDist::Kind::constant:
        return d_.a;
      case LengthDist::Kind::uniform:
        return static_cast<double>(std::uniform_int_distribution<std::int64_t>(
            static_cast<std::int64_t>(d_.a), static_cast<std::int64_t>(d_.b))(rng));
      case LengthDist::Kind::normal:
        return d_.b == 0.0 ? d_.a : std::normal_distribution<double>(d_.a, d_.b)(rng);
      case LengthDist::Kind::lognormal:
        return std::exp(d_.b == 0.0 ? d_.a : std::normal_distribution<double>(d_.a, d_.b)(rng));
    }
    throw InternalError("Sampler: LengthDist kind out of range");
  }

 private:
  LengthDist d_;
};

void sort_by_arrival(RequestStream& s) {
  if (std::is_sorted(s.requests.begin(), s.requests.end(), [](const Request& a, const Request& b) {
        return a.arrival_step < b.arrival_step;
      })) {
    return;
  }
  std::vector<std::size_t> order(s.requests.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return s.requests[a].arrival_step < s.requests[b].arrival_step;
  });
  const auto n = static_cast<std::size_t>(s.samples);
  std::vector<Request> requests(order.size());
  std::vector<std::int32_t> outputs(s.output_tokens.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    requests[i] = s.requests[order[i]];
    std::copy_n(s.output_tokens.begin() + static_cast<std::ptrdiff_t>(order[i] * n), n,
                outputs.begin() + static_cast<std::ptrdiff_t>(i * n));
  }
  s.requests = std::move(requests);
  s.output_tokens = std::move(outputs);
}

}  // namespace

LengthDist parse_length_dist(std::string_view spec, std::string_view flag) {
  const std::string forms =
      "valid forms: const:N, uniform:MIN,MAX, normal:MEAN,STDDEV, lognormal:MU,SIGMA";
  const std::size_t colon = spec.find(':');
  const std::string_view name = trim(spec.substr(0, colon));
  LengthDist d;
  d.text = std::string(spec);
  int arity = 0;
  if (name == "const") {
    d.kind = LengthDist::Kind::constant;
    arity = 1;
  } else if (name == "uniform") {
    d.kind = LengthDist::Kind::uniform;
    arity = 2;
  } else if (name == "normal") {
    d.kind = LengthDist::Kind::normal;
    arity = 2;
  } else if (name == "lognormal") {
    d.kind = LengthDist::Kind::lognormal;
    arity = 2;
  } else {
    throw ConfigError(fmt::format("{} '{}': unknown distribution '{}'; {}{}", flag, spec, name,
                                  forms,
                                  did_you_mean(name, {"const", "uniform", "normal", "lognormal"})));
  }
  const auto params = colon == std::string_view::npos ? std::vector<std::string_view>{}
                                                      : split(spec.substr(colon + 1), ',');
  if (static_cast<int>(params.size()) != arity) {
    throw ConfigError(fmt::format("{} '{}': {} takes {} parameter{}; {}", flag, spec, name, arity,
                                  arity == 1 ? "" : "s", forms));
  }
  double v[2] = {0.0, 0.0};
  for (int i = 0; i < arity; ++i) {
    if (!parse_double(params[static_cast<std::size_t>(i)], v[i])) {
      throw ConfigError(fmt::format("{} '{}': parameter '{}' is not a number", flag, spec,
                                    params[static_cast<std::size_t>(i)]));
    }
  }
  d.a = v[0];
  d.b = v[1];
  const auto whole = [](double x) { return x == std::floor(x); };
  switch (d.kind) {
    case LengthDist::Kind::constant:
      if (!whole(d.a) || d.a < 1 || d.a > kMaxTokens) {
        throw ConfigError(
            fmt::format("{} '{}': N must be an integer in [1, {}]", flag, spec, kMaxTokens));
      }
      break;
    case LengthDist::Kind::uniform:
      if (!whole(d.a) || !whole(d.b) || d.a < 1 || d.a > d.b || d.b > kMaxTokens) {
        throw ConfigError(
            fmt::format("{} '{}': MIN and MAX must be integers with 1 <= MIN <= MAX <= {}", flag,
                        spec, kMaxTokens));
      }
      break;
    case LengthDist::Kind::normal:
      if (d.b < 0 || std::abs(d.a) > 1e9 || d.b > 1e9) {
        throw ConfigError(
            fmt::format("{} '{}': STDDEV must be >= 0 and both at most 1e9", flag, spec));
      }
      break;
    case LengthDist::Kind::lognormal:
      if (d.b < 0 || d.b > 10 || std::abs(d.a) > 50) {
        throw ConfigError(fmt::format(
            "{} '{}': MU must be in [-50, 50] and SIGMA in [0, 10] (they are of ln(tokens))", flag,
            spec));
      }
      break;
  }
  return d;
}

ArrivalProcess parse_arrivals(std::string_view spec, std::string_view flag) {
  ArrivalProcess a;
  a.text = std::string(spec);
  if (trim(spec) == "burst") return a;
  const std::size_t colon = spec.find(':');
  const std::string_view name = trim(spec.substr(0, colon));
  if (name != "poisson") {
    throw ConfigError(fmt::format("{} '{}': valid forms are burst and poisson:RATE{}", flag, spec,
                                  did_you_mean(name, {"burst", "poisson"})));
  }
  double rate = 0.0;
  if (colon == std::string_view::npos || !parse_double(spec.substr(colon + 1), rate) ||
      !(rate >= kMinPoissonRate) || rate > kMaxPoissonRate) {
    throw ConfigError(fmt::format(
        "{} '{}': poisson needs a rate in requests per step in [{:g}, {:g}] (e.g. poisson:2.5; "
        "the least is one request per {:g} steps, the latest step a request may arrive at)",
        flag, spec, kMinPoissonRate, kMaxPoissonRate, kMaxArrivalStep));
  }
  a.kind = ArrivalProcess::Kind::poisson;
  a.rate_per_step = rate;
  return a;
}

void validate(const StreamSpec& s) {
  if (s.requests < 1 || s.requests > kMaxSequences) {
    throw ConfigError(
        fmt::format("--requests {} is out of range [1, {}]", s.requests, kMaxSequences));
  }
  if (s.samples < 1 || s.samples > 64) {
    throw ConfigError(fmt::format("--samples {} is out of range [1, 64]", s.samples));
  }
  if (s.requests * s.samples > kMaxSequences) {
    throw ConfigError(fmt::format("--requests {} x --samples {} exceeds {} sequences", s.requests,
                                  s.samples, kMaxSequences));
  }
  if (s.prompt_groups < 1 || s.prompt_groups > kMaxSequences) {
    throw ConfigError(
        fmt::format("--prompt-groups {} is out of range [1, {}]", s.prompt_groups, kMaxSequences));
  }
  for (auto [flag, v] : {std::pair{"--max-prompt-tokens", s.max_prompt_tokens},
                         std::pair{"--max-output-tokens", s.max_output_tokens}}) {
    if (v < 1 || v > kMaxTokens) {
      throw ConfigError(fmt::format("{} {} is out of range [1, {}]", flag, v, kMaxTokens));
    }
  }
  if (s.shared_prefix_tokens < 0 || s.shared_prefix_tokens > s.max_prompt_tokens) {
    throw ConfigError(
        fmt::format("--shared-prefix-tokens {} must be in [0, --max-prompt-tokens {}]",
                    s.shared_prefix_tokens, s.max_prompt_tokens));
  }
}

RequestStream generate_stream(const StreamSpec& spec) {
  validate(spec);
  RequestStream s;
  s.samples = spec.samples;
  s.shared_prefix_tokens = spec.shared_prefix_tokens;
  s.max_output_tokens = spec.max_output_tokens;
  s.origin = "generated";
  const auto n = static_cast<std::size_t>(spec.requests);
  // Reserved, filled as drawn: a resize would touch all of it (320 MB at 20 million requests,
  // seconds on a loaded machine) before the first stop check below.
  s.requests.reserve(n);
  s.output_tokens.reserve(n * static_cast<std::size_t>(spec.samples));
  std::mt19937_64 rng(spec.seed);
  Sampler prompt(spec.prompt_len), output(spec.output_len);
  std::exponential_distribution<double> gap(
      spec.arrivals.kind == ArrivalProcess::Kind::poisson ? spec.arrivals.rate_per_step : 1.0);
  std::uniform_int_distribution<std::int64_t> group(0, spec.prompt_groups - 1);
  double t = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    // Ctrl-C, SIGTERM, --max-seconds: 20 million requests take seconds to draw (a stop came 8 s
    // late); a check every 65536 is a few milliseconds apart.
    if ((i & 0xFFFFu) == 0) run_control::check();
    Request& r = s.requests.emplace_back();
    if (spec.arrivals.kind == ArrivalProcess::Kind::poisson) {
      t += gap(rng);
      // Checked before the conversion, which past int64's range is undefined.
      if (!(t <= kMaxArrivalStep)) {
        throw ConfigError(fmt::format(
            "--arrivals '{}': request {} of {} arrives after step {:g}, the latest a request may "
            "arrive at; give a higher rate or fewer --requests",
            spec.arrivals.text, i + 1, n, kMaxArrivalStep));
      }
      r.arrival_step = static_cast<std::int64_t>(std::ceil(t));
    }
    bool clamped = false;
    r.prompt_tokens = to_tokens(static_cast<double>(spec.shared_prefix_tokens) + prompt(rng),
                                spec.max_prompt_tokens, clamped);
    r.group = static_cast<std::int32_t>(group(rng));
    for (int k = 0; k < spec.samples; ++k) {
      s.output_tokens.push_back(to_tokens(output(rng), spec.max_output_tokens, clamped));
    }
    if (clamped) ++s.clamped_requests;
  }
  return s;
}

RequestStream parse_trace(std::string_view text, const std::string& origin,
                          const StreamSpec& spec) {
  validate(spec);
  RequestStream s;
  s.samples = spec.samples;
  s.shared_prefix_tokens = spec.shared_prefix_tokens;
  s.max_output_tokens = spec.max_output_tokens;
  s.origin = origin;
  std::int64_t line_no = 0;
  bool seen_data = false;
  std::size_t header_fields = 0;  // the fields the header names; 0: no header
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if ((line_no & 0xFFFF) == 0) run_control::check();  // a 256 MiB trace: millions of lines
    if (line.empty() || line.front() == '#') continue;
    const auto where = [&] { return fmt::format("trace '{}' line {}", origin, line_no); };
    const auto fields = split(line, ',');
    if (!seen_data && !fields.empty() && trim(fields[0]) == "arrival") {
      // The header must name the documented columns in their order, and then no row has more
      // fields than it names: a header `arrival,output_len,prompt_len` was read as if it were
      // prompt_len,output_len, and rows with a group under a header without one were taken
      // (issue #50's third probe).
      static constexpr std::array<std::string_view, 4> kColumns = {"arrival", "prompt_len",
                                                                   "output_len", "group"};
      bool named = fields.size() == 3 || fields.size() == 4;
      for (std::size_t k = 0; named && k < fields.size(); ++k)
        named = trim(fields[k]) == kColumns[k];
      if (!named) {
        throw ConfigError(fmt::format(
            "{}: the header '{}' must be arrival,prompt_len,output_len or "
            "arrival,prompt_len,output_len,group",
            where(),
            line.size() > 80 ? std::string(line.substr(0, 80)) + "..." : std::string(line)));
      }
      header_fields = fields.size();
      seen_data = true;
      continue;
    }
    seen_data = true;
    // (A row may leave the group out under a header that names it: group 0.)
    if (header_fields != 0 && fields.size() > header_fields) {
      throw ConfigError(fmt::format("{}: {} comma-separated fields, where the header names {} ({})",
                                    where(), fields.size(), header_fields,
                                    header_fields == 3 ? "arrival,prompt_len,output_len"
                                                       : "arrival,prompt_len,output_len,group"));
    }
    if (fields.size() != 3 && fields.size() != 4) {
      throw ConfigError(fmt::format(
          "{}: expected 3 or 4 comma-separated fields (arrival,prompt_len,output_len[,group]), "
          "got {}",
          where(), fields.size()));
    }
    double arrival = 0.0;
    if (!parse_double(fields[0], arrival) || arrival < 0 || arrival > kMaxArrivalStep) {
      throw ConfigError(
          fmt::format("{}: arrival '{}' is not a step number >= 0", where(), trim(fields[0])));
    }
    std::int64_t prompt = 0, output = 0, group = 0;
    if (!parse_int(fields[1], prompt) || prompt < 1) {
      throw ConfigError(
          fmt::format("{}: prompt_len '{}' is not a positive integer", where(), trim(fields[1])));
    }
    if (!parse_int(fields[2], output) || output < 1) {
      throw ConfigError(
          fmt::format("{}: output_len '{}' is not a positive integer", where(), trim(fields[2])));
    }
    if (fields.size() == 4 && (!parse_int(fields[3], group) || group < 0 || group > INT32_MAX)) {
      throw ConfigError(
          fmt::format("{}: group '{}' is not an integer >= 0", where(), trim(fields[3])));
    }
    if (static_cast<std::int64_t>(s.requests.size()) >= kMaxSequences / spec.samples) {
      throw ConfigError(fmt::format("{}: the trace has more than {} requests", where(),
                                    kMaxSequences / spec.samples));
    }
    bool clamped = false;
    Request r;
    r.arrival_step = static_cast<std::int64_t>(std::ceil(arrival));
    r.prompt_tokens = to_tokens(static_cast<double>(std::min(prompt, kMaxTokens)),
                                spec.max_prompt_tokens, clamped);
    r.group = static_cast<std::int32_t>(group);
    s.requests.push_back(r);
    const std::int32_t out = to_tokens(static_cast<double>(std::min(output, kMaxTokens)),
                                       spec.max_output_tokens, clamped);
    for (int k = 0; k < spec.samples; ++k) s.output_tokens.push_back(out);
    if (clamped) ++s.clamped_requests;
  }
  if (s.requests.empty()) throw ConfigError(fmt::format("trace '{}' has no requests", origin));
  sort_by_arrival(s);
  return s;
}

RequestStream load_trace(const std::filesystem::path& path, const StreamSpec& spec) {
  return parse_trace(read_text_file(path, "trace file", kMaxDataFileBytes), path.string(), spec);
}

StreamStats describe(const RequestStream& s) {
  StreamStats st;
  st.requests = static_cast<std::int64_t>(s.requests.size());
  st.samples_per_request = s.samples;
  st.clamped_requests = s.clamped_requests;
  st.origin = s.origin;
  double prompt_sum = 0, output_sum = 0;
  for (const Request& r : s.requests) {
    prompt_sum += r.prompt_tokens;
    st.prompt_tokens_max = std::max<std::int64_t>(st.prompt_tokens_max, r.prompt_tokens);
    st.last_arrival_step = std::max(st.last_arrival_step, r.arrival_step);
  }
  for (std::int32_t o : s.output_tokens) {
    output_sum += o;
    st.output_tokens_max = std::max<std::int64_t>(st.output_tokens_max, o);
  }
  if (st.requests > 0) st.prompt_tokens_mean = prompt_sum / static_cast<double>(st.requests);
  if (!s.output_tokens.empty()) {
    st.output_tokens_mean = output_sum / static_cast<double>(s.output_tokens.size());
  }
  return st;
}

}  // namespace iosim::kvcache
