#include "suite.hpp"

#include <fstream>
#include <set>
#include <sstream>

namespace iosim_cuda {

namespace {

int parse_positive_int(const std::string& value, const std::string& where) {
  std::size_t used = 0;
  long v = 0;
  try {
    v = std::stol(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || v <= 0 || v > (1L << 30))
    throw SuiteError(where + ": expected a positive integer, got '" + value + "'");
  return static_cast<int>(v);
}

}  // namespace

std::string default_case_id(const Case& c) {
  std::ostringstream id;
  id << c.schedule << "_b" << c.batch << "_h" << c.heads << "_n" << c.seq << "_nkv" << c.seq_kv
     << "_d" << c.head_dim;
  if (c.schedule != "standard") id << "_bq" << c.block_q << "_bkv" << c.block_kv;
  if (c.causal) id << "_causal";
  return id.str();
}

std::vector<Case> load_suite(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SuiteError("cannot open suite file '" + path + "'");
  std::vector<Case> cases;
  std::set<std::string> ids;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string where = path + ":" + std::to_string(line_no);
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    Case c;
    if (!(words >> c.schedule)) continue;  // blank or comment line
    if (c.schedule != "standard" && c.schedule != "flash1" && c.schedule != "flash2")
      throw SuiteError(where + ": unknown schedule '" + c.schedule +
                       "' (valid: standard, flash1, flash2)");
    std::string word;
    while (words >> word) {
      const auto eq = word.find('=');
      if (eq == std::string::npos) throw SuiteError(where + ": expected key=value, got '" + word + "'");
      const std::string key = word.substr(0, eq);
      const std::string value = word.substr(eq + 1);
      const std::string at = where + " key '" + key + "'";
      if (key == "B") c.batch = parse_positive_int(value, at);
      else if (key == "H") c.heads = parse_positive_int(value, at);
      else if (key == "N") c.seq = parse_positive_int(value, at);
      else if (key == "Nkv") c.seq_kv = parse_positive_int(value, at);
      else if (key == "d") c.head_dim = parse_positive_int(value, at);
      else if (key == "bq") c.block_q = parse_positive_int(value, at);
      else if (key == "bkv") c.block_kv = parse_positive_int(value, at);
      else if (key == "causal") {
        if (value != "0" && value != "1") throw SuiteError(at + ": expected 0 or 1");
        c.causal = value == "1";
      } else if (key == "id") c.id = value;
      else
        throw SuiteError(where + ": unknown key '" + key + "' (valid: B H N Nkv d bq bkv causal id)");
    }
    if (c.batch == 0 || c.heads == 0 || c.seq == 0 || c.head_dim == 0)
      throw SuiteError(where + ": B, H, N and d are required");
    if (c.seq_kv == 0) c.seq_kv = c.seq;
    if (c.schedule != "standard" && (c.block_q == 0 || c.block_kv == 0))
      throw SuiteError(where + ": " + c.schedule + " needs bq and bkv");
    if (c.causal && c.seq_kv < c.seq)
      throw SuiteError(where + ": causal (bottom-right aligned) needs Nkv >= N");
    if (c.id.empty()) c.id = default_case_id(c);
    if (!ids.insert(c.id).second) throw SuiteError(where + ": duplicate case id '" + c.id + "'");
    cases.push_back(c);
  }
  return cases;
}

}  // namespace iosim_cuda
