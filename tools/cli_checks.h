// Command-line helpers shared by the programs' mains (and bench_report): validators, list parsing.
#pragma once

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace teq::cli {

/// CLI11's NonNegativeNumber prints its range as "0.000000 to 1797693...": this one says what it wants.
inline const CLI::Validator kNonNegative(
    [](std::string& s) {
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      return end != s.c_str() && *end == '\0' && v >= 0 ? std::string() : "must be a number >= 0, got " + s;
    },
    "NUMBER>=0", "non-negative");

/// The same for a count that must be at least 1 (--rounds, --max-graphs).
inline const CLI::Validator kPositive(
    [](std::string& s) {
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      return end != s.c_str() && *end == '\0' && v > 0 ? std::string() : "must be a number > 0, got " + s;
    },
    "NUMBER>0", "positive");

/// "a,b,,c" -> {"a", "b", "c"}: the comma-separated lists of --ops, --models, --runs.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace teq::cli
