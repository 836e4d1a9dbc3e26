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
  id << c.schedule << (c.pass == "bwd" ? "_two_pass_bwd" : "") << "_b" << c.batch << "_h"
     << c.heads << "_n" << c.seq << "_nkv" << c.seq_kv << "_d" << c.head_dim;
  if (c.schedule != "standard") id << "_bq" << c.block_q << "_bkv" << c.block_kv;
  if (c.kv_heads != c.heads) id << "_hkv" << c.kv_heads;
  if (!c.pattern.empty()) {
    std::string pat = c.pattern;  // local:4 -> local4, random:0.25:1 -> random0.25s1
    const auto colon = pat.find(':');
    if (colon != std::string::npos) pat.erase(colon, 1);
    for (char& ch : pat)
      if (ch == ':') ch = 's';
    id << "_" << pat;
  }
  if (c.splits > 0) id << "_s" << c.splits;
  if (c.page_tokens > 0) id << "_page" << c.page_tokens;
  if (c.latent > 0) id << "_latent" << c.latent;
  if (!c.kernel.empty()) id << "_" << c.kernel << "_st" << c.stages << "_" << c.dtype;
  if (c.causal) id << "_causal";
  if (c.window > 0) id << "_w" << c.window;
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
    if (c.schedule != "standard" && c.schedule != "flash1" && c.schedule != "flash2" &&
        c.schedule != "block-sparse" && c.schedule != "flash-decoding" && c.schedule != "paged")
      throw SuiteError(where + ": unknown schedule '" + c.schedule +
                       "' (valid: standard, flash1, flash2, block-sparse, flash-decoding, paged)");
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
      } else if (key == "window") c.window = parse_positive_int(value, at);
      else if (key == "id") c.id = value;
      else if (key == "pattern") c.pattern = value;
      else if (key == "Hkv") c.kv_heads = parse_positive_int(value, at);
      else if (key == "splits") c.splits = parse_positive_int(value, at);
      else if (key == "page") c.page_tokens = parse_positive_int(value, at);
      else if (key == "latent") c.latent = parse_positive_int(value, at);
      else if (key == "pass") {
        if (value != "fwd" && value != "bwd") throw SuiteError(at + ": expected fwd or bwd");
        c.pass = value;
      }
      else if (key == "kernel") c.kernel = value;
      else if (key == "stages") c.stages = parse_positive_int(value, at);
      else if (key == "dtype") c.dtype = value;
      else
        throw SuiteError(where + ": unknown key '" + key +
                         "' (valid: B H N Nkv d bq bkv causal window id pattern Hkv splits page latent pass "
                         "kernel stages dtype)");
    }
    if (c.batch == 0 || c.heads == 0 || c.seq == 0 || c.head_dim == 0)
      throw SuiteError(where + ": B, H, N and d are required");
    if (c.seq_kv == 0) c.seq_kv = c.seq;
    const bool decoding = c.schedule == "flash-decoding" || c.schedule == "paged";
    if (c.kv_heads == 0) c.kv_heads = c.heads;
    if (c.heads % c.kv_heads != 0)
      throw SuiteError(where + ": Hkv must divide H");
    if (c.kv_heads != c.heads && !decoding)
      throw SuiteError(where + ": Hkv (grouped-query heads) is for flash-decoding and paged");
    if ((c.schedule == "block-sparse") != !c.pattern.empty())
      throw SuiteError(where + ": pattern=... is required for block-sparse and only for it");
    if (decoding) {
      if (c.splits == 0) c.splits = 1;
      if (c.schedule == "flash-decoding" && c.splits < 2)
        throw SuiteError(where + ": flash-decoding needs splits >= 2");
      if (c.schedule == "paged" && c.page_tokens == 0) c.page_tokens = 16;
      if (c.block_q == 0) c.block_q = 16;  // the m-tile the query rows are padded to
    } else if (c.splits != 0) {
      throw SuiteError(where + ": splits=... is for flash-decoding and paged");
    }
    if (c.latent > 0) {
      if (!decoding)
        throw SuiteError(where + ": latent=... (a latent K/V cache, MLA) is for flash-decoding and paged");
      if (c.kv_heads != 1)
        throw SuiteError(where + ": latent=... needs Hkv=1 (every query head reads the one cache)");
      if (c.latent >= c.head_dim)
        throw SuiteError(where + ": latent=" + std::to_string(c.latent) +
                         " must be below d (V is the first latent columns of each d-column row)");
    }
    if (c.pass == "bwd" && c.schedule != "flash2")
      throw SuiteError(where + ": pass=bwd is for flash2 (the two-pass backward)");
    if (c.page_tokens != 0 && c.schedule != "paged")
      throw SuiteError(where + ": page=... is for paged");
    if (c.schedule != "standard" && (c.block_q == 0 || c.block_kv == 0))
      throw SuiteError(where + ": " + c.schedule + " needs bq and bkv");
    if (!c.kernel.empty()) {
      if (c.schedule != "flash2") throw SuiteError(where + ": kernel=... is for flash2");
      if (c.kernel != "wg1_tma_fwd" && c.kernel != "wg1_mma_fwd")
        throw SuiteError(where + ": unknown kernel '" + c.kernel +
                         "' (valid: wg1_tma_fwd, wg1_mma_fwd)");
      if (c.stages < 2 || c.stages > 6)
        throw SuiteError(where + ": " + c.kernel + " needs stages=2..6");
    } else if (c.stages != 0 || c.dtype != "fp16") {
      throw SuiteError(where + ": stages=... and dtype=... are for kernel=wg1_*");
    }
    if (c.dtype != "fp16" && c.dtype != "bf16")
      throw SuiteError(where + ": dtype must be fp16 or bf16");
    if (c.causal && c.seq_kv < c.seq)
      throw SuiteError(where + ": causal (bottom-right aligned) needs Nkv >= N");
    // The window runs in flash2_fwd_kernel's causal forward only (iosim also has the symmetric
    // band without causal; this kernel does not).
    if (c.window > 0 && (c.schedule != "flash2" || !c.kernel.empty() || c.pass != "fwd" || !c.causal))
      throw SuiteError(where + ": window=... is for flash2's own forward (no kernel=...) with causal=1");
    if (c.id.empty()) c.id = default_case_id(c);
    if (!ids.insert(c.id).second) throw SuiteError(where + ": duplicate case id '" + c.id + "'");
    cases.push_back(c);
  }
  return cases;
}

}  // namespace iosim_cuda
