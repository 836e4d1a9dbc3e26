// The `iosim` command: builds the subcommands (cli/commands.hpp), parses, runs the chosen one.
// Only this file turns errors into exit codes:
//   0 success, 2 bad input, an infeasible configuration or output that could not be written,
//   3 stopped by a signal or a time budget (nothing written), or an internal error (a bug).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "cli/output_file.hpp"
#include "cli/strict_numbers.hpp"
#include "sim/base/errors.hpp"
#include "sim/base/memory_budget.hpp"
#include "sim/base/run_control.hpp"
#include "sim/base/suggest.hpp"
#include "sim/base/version.hpp"

namespace {

// `rc`, or 2 when what the command printed did not all reach stdout (a full disk, /dev/full):
// a report cut short must not look like a success.
int stdout_written(int rc) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int why = errno;
  if (flushed && std::cout.good() && !std::ferror(stdout)) return rc;
  std::cerr << "iosim: cannot write the output to stdout"
            << (iosim::cli::stdout_was_closed() ? std::string(": stdout is closed")
                : !flushed && why != 0          ? std::string(": ") + std::strerror(why)
                                                : std::string())
            << "\n";
  return 2;
}

// "; not understood: --se 128 (did you mean '--seq'?)" for the words the parsed subcommand of
// `app` left over; "" when none.
std::string unexpected_words(CLI::App& app) {
  for (CLI::App* cmd : app.get_subcommands()) {
    const std::vector<std::string> left = cmd->remaining();
    if (left.empty()) continue;
    std::string words;
    for (const std::string& w : left) words += (words.empty() ? "" : " ") + w;
    std::vector<std::string> flags;
    for (const CLI::Option* o : cmd->get_options()) {
      for (const std::string& name : o->get_lnames()) flags.push_back("--" + name);
    }
    return "; not understood: " + words + iosim::did_you_mean(left.front(), flags);
  }
  return "";
}

constexpr const char* kOutOfMemory =
    "iosim: out of memory: the input or the problem is too large for this machine\n";

// Room to unwind in once memory runs out. nlohmann/json frees a document through a vector it
// allocates inside a noexcept destructor, so a std::bad_alloc while a large file was parsed (report
// under `ulimit -v`) was followed by a second one in that destructor and std::terminate, not by
// the handler in main(). The first allocation that fails frees this reserve and throws; what the
// unwinding allocates comes from the room it left. 4 MiB holds the vector of a 256 MiB file's
// largest array (16 bytes an element).
constexpr std::size_t kUnwindReserveBytes = std::size_t{4} << 20;
char* g_unwind_reserve = nullptr;

void out_of_memory() {
  delete[] g_unwind_reserve;  // (null after the first time)
  g_unwind_reserve = nullptr;
  throw std::bad_alloc();
}

// The last resort, should a std::bad_alloc still reach std::terminate (thrown where no handler
// can take it): the same message and exit code as main()'s, not an abort.
[[noreturn]] void on_terminate() {
  if (const std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      (void)!::write(STDERR_FILENO, kOutOfMemory, std::strlen(kOutOfMemory));
      std::_Exit(2);
    } catch (...) {
    }
  }
  std::abort();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace iosim;
  std::set_terminate(on_terminate);
  g_unwind_reserve = new (std::nothrow) char[kUnwindReserveBytes];  // (none where 4 MiB is not)
  std::set_new_handler(out_of_memory);
  cli::occupy_closed_standard_descriptors();
  CLI::App app{"iosim: GPU memory-hierarchy simulator and IO-complexity analyzer for attention"};
  app.require_subcommand(1);
  app.get_formatter()->column_width(34);
  app.set_version_flag("--version", std::string("iosim ") + std::string(version_text()),
                       "print iosim's version and the git commit it was built from");
  std::vector<std::pair<CLI::App*, cli::Action>> commands;
  for (auto add : {cli::add_profiles_command, cli::add_run_command, cli::add_demo_command,
                   cli::add_validate_command, cli::add_kvcache_command, cli::add_sweep_command,
                   cli::add_report_command, cli::add_explain_command, cli::add_kernels_command,
                   cli::add_layer_command, cli::add_tune_command, cli::add_models_command}) {
    cli::Action action = add(app);
    commands.emplace_back(app.get_subcommands({}).back(), std::move(action));
  }
  // The commands that simulate take the memory budget (sim/base/memory_budget.hpp); a budget
  // that does not parse is refused before anything runs.
  std::string max_memory;
  for (auto& [cmd, action] : commands) {
    const std::string& name = cmd->get_name();
    if (name == "run" || name == "sweep" || name == "validate" || name == "explain" ||
        name == "tune") {
      cmd->add_option("--max-memory", max_memory,
                      "refuse work that would take more host memory than this, e.g. 8G, 512M "
                      "(default: three quarters of what this process may use)");
    }
  }
  cli::make_numbers_strict(app);
  cli::refuse_empty_values(app);
  // CLI11 says only "A subcommand is required" for `iosim frobnicate`; name the word instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const auto& [cmd, action] : commands) names.push_back(cmd->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      std::cerr << "iosim: unknown subcommand '" << argv[1] << "'; subcommands: " << list
                << did_you_mean(argv[1], names) << "\nRun 'iosim --help' for usage.\n";
      return 2;
    }
  }
  // `--batch=` is an empty value, refused as `--batch ""` is; CLI11 took the next word for the
  // value instead (`sweep --seq 128 --batch= --max-seconds 8` said only "The following argument
  // was not expected: 8"; issue #50's fifth probe).
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.size() > 3 && word.rfind("--", 0) == 0 && word.back() == '=' &&
        word.find('=') == word.size() - 1) {
      std::cerr << "iosim: " << word
                << " has an empty value; give one, or leave the flag out\nRun 'iosim --help' for "
                   "usage.\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return stdout_written(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return stdout_written(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return stdout_written(app.exit(e));
  } catch (const CLI::RequiredError& e) {
    // CLI11 checks required flags before unknown ones, so `run --se 128` said only "--seq is
    // required": name the words it did not take too, with the flag they most look like.
    std::cerr << "iosim: " << e.what() << unexpected_words(app)
              << "\nRun 'iosim --help' for usage.\n";
    return 2;
  } catch (const CLI::ArgumentMismatch& e) {
    // A flag given twice: CLI11 said "--seq: At Most 1 required but received 2", as if a value
    // were missing (issue #50's sixth probe).
    const std::string what = e.what();
    const std::string::size_type at = what.find(": At Most 1 required but received ");
    if (at != std::string::npos) {
      std::cerr << "iosim: " << what.substr(0, at) << " is given "
                << what.substr(at + std::string(": At Most 1 required but received ").size())
                << " times; give it once\nRun 'iosim --help' for usage.\n";
    } else {
      std::cerr << "iosim: " << what << "\nRun 'iosim --help' for usage.\n";
    }
    return 2;
  } catch (const CLI::ParseError& e) {
    std::cerr << "iosim: " << e.what() << "\nRun 'iosim --help' for usage.\n";
    return 2;
  }
  // Ctrl-C or SIGTERM asks the run to stop at its next check (exit 3, nothing written); a
  // second one ends the process at once (SA_RESETHAND restores the default action).
  struct sigaction stop {};
  stop.sa_handler = [](int sig) { run_control::request_stop(sig); };
  sigemptyset(&stop.sa_mask);
  stop.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &stop, nullptr);
  sigaction(SIGTERM, &stop, nullptr);
  try {
    if (!max_memory.empty()) {
      memory_budget::set_bytes(memory_budget::parse_size(max_memory, "--max-memory"),
                               "--max-memory");
    }
    for (auto& [cmd, action] : commands) {
      if (cmd->parsed()) return stdout_written(action());
    }
  } catch (const ConfigError& e) {
    std::cerr << "iosim: " << e.what() << "\n";
    return 2;
  } catch (const Stopped& e) {
    std::cerr << "iosim: " << e.what() << "\n";
    return 3;
  } catch (const std::bad_alloc&) {
    std::cerr << kOutOfMemory;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "iosim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
