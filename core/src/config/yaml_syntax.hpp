#pragma once
// A YAML syntax error in words a person reads: yaml-cpp says "end of
// sequence flow not found" at the end of the file; a person wants "this '['
// is never closed" where it opened, and "a tab in the indentation".
#include <string>

namespace m0::config_detail {

// The message for a document `text` (named `file`) that yaml-cpp refused
// with `message` at 0-based `line`/`column` (negative: no position).
std::string explain_yaml_error(const std::string& text, const std::string& file, const std::string& message,
                               int line, int column);

}  // namespace m0::config_detail
