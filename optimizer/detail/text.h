// Small formatting helpers shared by eqsat-run's driver files (optimizer/*.cpp), so that each is written once.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

namespace teq::detail {

/// One number through a printf format ("%.3g", ...).
inline std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

/// " (tensor data in FILE)" for an external data file written beside a model; empty for none.
inline std::string data_note(const std::filesystem::path& data) {
  return data.empty() ? "" : " (tensor data in " + data.string() + ")";
}

}  // namespace teq::detail
