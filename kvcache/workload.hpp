#pragma once
// The request stream a serving KV cache sees: when each request arrives, how long its prompt is,
// and how many tokens each of its samples generates. Streams are drawn from named distributions
// with a seed, or read from a CSV trace. Time is counted in scheduler steps: one step is one
// decode iteration, in which every running sequence generates one token.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace iosim::kvcache {

/// A distribution of token counts: "const:N", "uniform:MIN,MAX" (integers, inclusive),
/// "normal:MEAN,STDDEV", "lognormal:MU,SIGMA" (of the natural log; median = e^MU). Draws are
/// rounded to integers and clamped to [1, the flag's maximum].
struct LengthDist {
  enum class Kind { constant, uniform, normal, lognormal };
  Kind kind = Kind::constant;
  double a = 1.0, b = 0.0;
  std::string text;  // as the user wrote it, for reports
};

/// Parses a LengthDist spec; throws ConfigError naming `flag` and the valid forms.
LengthDist parse_length_dist(std::string_view spec, std::string_view flag);

/// When requests arrive: "burst" (all at step 0) or "poisson:RATE" (RATE requests per step on
/// average, exponential gaps; a request arriving at time x may be admitted from step ceil(x)).
struct ArrivalProcess {
  enum class Kind { burst, poisson };
  Kind kind = Kind::burst;
  double rate_per_step = 0.0;
  std::string text;
};

/// Parses an ArrivalProcess spec; throws ConfigError naming `flag`.
ArrivalProcess parse_arrivals(std::string_view spec, std::string_view flag);

/// What to draw, and the server's limits that apply to drawn and traced streams alike.
struct StreamSpec {
  std::int64_t requests = 1000;
  LengthDist prompt_len{LengthDist::Kind::lognormal, 5.0, 1.0, "lognormal:5,1"};
  LengthDist output_len{LengthDist::Kind::lognormal, 5.5, 0.9, "lognormal:5.5,0.9"};
  ArrivalProcess arrivals{ArrivalProcess::Kind::burst, 0.0, "burst"};
  int samples = 1;                        // parallel samples per request (same prompt)
  std::int64_t prompt_groups = 1;         // requests are spread uniformly over this many groups
  std::int64_t shared_prefix_tokens = 0;  // each group's common prompt prefix (a system prompt)
  std::int64_t max_prompt_tokens = 2048;
  std::int64_t max_output_tokens = 2048;  // also what the contiguous policy reserves per sample
  std::uint64_t seed = 1;
};

/// Checks a StreamSpec's numbers; throws ConfigError naming the flag.
void validate(const StreamSpec& spec);

/// One request. Its prompt's first min(shared_prefix_tokens, prompt_tokens) tokens are the same
/// for every request of its group.
struct Request {
  std::int64_t arrival_step = 0;
  std::int32_t prompt_tokens = 1;
  std::int32_t group = 0;
};

/// A whole stream, sorted by arrival.
struct RequestStream {
  std::vector<Request> requests;
  /// Tokens each sample generates: request i's samples are at [i * samples, (i + 1) * samples).
  std::vector<std::int32_t> output_tokens;
  int samples = 1;
  std::int64_t shared_prefix_tokens = 0;
  std::int64_t max_output_tokens = 2048;
  std::int64_t clamped_requests = 0;  // requests whose lengths were cut to the maxima
  std::string origin;                 // "generated" or the trace's path

  std::int32_t output(std::size_t request, int sample) const {
    return output_tokens[request * static_cast<std::size_t>(samples) +
                         static_cast<std::size_t>(sample)];
  }
};

/// Draws `spec.requests` requests. Drawn prompt lengths are the part after the shared prefix:
/// prompt = shared_prefix_tokens + draw (then clamped). Deterministic for a given seed.
RequestStream generate_stream(const StreamSpec& spec);

/// Parses a CSV trace: lines "arrival,prompt_len,output_len[,group]" (arrival in steps, may be
/// fractional; prompt_len is the whole prompt; an optional header line and '#' comments are
/// skipped). Every sample of a request generates output_len tokens. Limits, samples and the shared
/// prefix come from `spec`. Throws ConfigError naming `origin` and the line.
RequestStream parse_trace(std::string_view csv_text, const std::string& origin,
                          const StreamSpec& spec);

/// Reads and parses a trace file; throws ConfigError when it cannot be read or is malformed.
RequestStream load_trace(const std::filesystem::path& path, const StreamSpec& spec);

/// Means and extremes of a stream, for reports.
struct StreamStats {
  std::int64_t requests = 0, samples_per_request = 1;
  double prompt_tokens_mean = 0, output_tokens_mean = 0;
  std::int64_t prompt_tokens_max = 0, output_tokens_max = 0;
  std::int64_t last_arrival_step = 0;
  std::int64_t clamped_requests = 0;
  std::string origin;
};

/// Summarizes a stream.
StreamStats describe(const RequestStream& stream);

}  // namespace iosim::kvcache
