// A grouped bar chart written directly as SVG (no plotting library): one group per model, one bar
// per series, a legend, value labels. Used by bench_report for the speedup chart.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace teq::bench {

struct BarSeries {
  std::string name;
  std::string color;                         // CSS colour, e.g. "#4e79a7"
  std::vector<std::optional<double>> values;  // one per group; nullopt: no bar (e.g. no published figure)
};

struct BarChart {
  std::string title;
  std::string y_label;
  std::vector<std::string> groups;
  std::vector<BarSeries> series;
};

/// The chart as a standalone SVG document.
std::string render_svg(const BarChart& chart);

}  // namespace teq::bench
