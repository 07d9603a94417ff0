// Command-line validators shared by the programs' mains.
#pragma once

#include <cstdlib>
#include <string>

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

}  // namespace teq::cli
