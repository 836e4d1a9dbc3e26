#pragma once
// The run page's "Where the bytes go" section (reports/run_page_tensors.cpp): each tensor's HBM
// bytes as a bar, its writes during the run apart from its lines left dirty in the L2 at the end;
// not part of the API, which is reports/run_page.hpp.
#include <string>

#include "api/iosim.hpp"

namespace iosim::run_page_detail {

/// The section's chart (an inline <svg>, styled by `style`: the charts' <style> element) and
/// its table.
std::string tensor_bytes_section(const Report& r, const std::string& style);

}  // namespace iosim::run_page_detail
