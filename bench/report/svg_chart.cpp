#include "svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace teq::bench {
namespace {

std::string fmt(double v, const char* f = "%.1f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string render_svg(const BarChart& chart) {
  const double width = 920, height = 420, left = 60, right = 20, top = 50, bottom = 70;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  double vmax = 1, vmin = 0;
  for (const BarSeries& s : chart.series)
    for (const auto& v : s.values)
      if (v) vmax = std::max(vmax, *v), vmin = std::min(vmin, *v);
  // About five grid lines at a round step (1, 2 or 5 times a power of ten).
  const double raw = std::max(vmax, -vmin) / 5, mag = std::pow(10, std::floor(std::log10(raw)));
  const double step = mag * (raw <= mag ? 1 : raw <= 2 * mag ? 2 : raw <= 5 * mag ? 5 : 10);
  double axis_max = std::ceil(vmax / step) * step;
  const double axis_min = vmin < 0 ? -std::ceil(-vmin / step) * step : 0;
  auto y = [&](double v) { return top + plot_h * (axis_max - v) / (axis_max - axis_min); };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(width, "%.0f") + "\" height=\"" +
                    fmt(height, "%.0f") + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + fmt(width / 2, "%.0f") + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" +
         escape(chart.title) + "</text>\n";
  // Grid lines and y ticks.
  for (double v = axis_min; v <= axis_max + 1e-9; v += step) {
    svg += "<line x1=\"" + fmt(left) + "\" x2=\"" + fmt(left + plot_w) + "\" y1=\"" + fmt(y(v)) + "\" y2=\"" +
           fmt(y(v)) + "\" stroke=\"" + (v == 0 ? "#444" : "#ddd") + "\"/>\n";
    svg += "<text x=\"" + fmt(left - 6) + "\" y=\"" + fmt(y(v) + 4) + "\" text-anchor=\"end\">" + fmt(v, "%.0f") +
           "</text>\n";
  }
  svg += "<text transform=\"translate(16," + fmt(top + plot_h / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         escape(chart.y_label) + "</text>\n";
  // Bars.
  const size_t groups = chart.groups.size(), n = chart.series.size();
  const double group_w = plot_w / std::max<size_t>(groups, 1), bar_w = group_w * 0.8 / std::max<size_t>(n, 1);
  for (size_t g = 0; g < groups; ++g) {
    const double x0 = left + g * group_w + group_w * 0.1;
    for (size_t s = 0; s < n; ++s) {
      const auto& v = chart.series[s].values.at(g);
      if (!v) continue;
      const double x = x0 + s * bar_w, y_top = y(std::max(*v, 0.0)), y_bot = y(std::min(*v, 0.0));
      svg += "<rect x=\"" + fmt(x) + "\" y=\"" + fmt(y_top) + "\" width=\"" + fmt(bar_w - 1) + "\" height=\"" +
             fmt(std::max(y_bot - y_top, 0.5)) + "\" fill=\"" + chart.series[s].color + "\"><title>" +
             escape(chart.series[s].name + ", " + chart.groups[g] + ": " + fmt(*v)) + "</title></rect>\n";
      svg += "<text x=\"" + fmt(x + bar_w / 2) + "\" y=\"" + fmt(y_top - 3) +
             "\" text-anchor=\"middle\" font-size=\"9\">" + fmt(*v, std::abs(*v) < 10 ? "%.1f" : "%.0f") +
             "</text>\n";
    }
    svg += "<text x=\"" + fmt(left + g * group_w + group_w / 2) + "\" y=\"" + fmt(top + plot_h + 18) +
           "\" text-anchor=\"middle\">" + escape(chart.groups[g]) + "</text>\n";
  }
  // Legend.
  double lx = left;
  for (const BarSeries& s : chart.series) {
    svg += "<rect x=\"" + fmt(lx) + "\" y=\"" + fmt(height - 30) + "\" width=\"12\" height=\"12\" fill=\"" + s.color +
           "\"/>\n";
    svg += "<text x=\"" + fmt(lx + 16) + "\" y=\"" + fmt(height - 20) + "\">" + escape(s.name) + "</text>\n";
    lx += 30 + 7.0 * s.name.size();
  }
  return svg + "</svg>\n";
}

}  // namespace teq::bench
