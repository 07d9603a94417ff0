// With node times measured on this GPU (--cost measured), eqsat-run lets the two graphs' measured end-to-end
// times decide. The verdict itself needs no GPU: it is checked here on given latencies (the GPU path runs in
// tools/gpu-check.sh where a GPU is lent).
#include <gtest/gtest.h>

#include "optimizer/cost/measured_cost.h"
#include "optimizer/eqsat_app.h"

namespace teq {
namespace {

LatencyComparison latencies(double original_ms, double optimized_ms) {
  LatencyComparison l;
  l.device = "NVIDIA H200";
  l.original.median_ms = original_ms;
  l.optimized.median_ms = optimized_ms;
  l.original.repeats = l.optimized.repeats = 20;
  l.speedup = original_ms / optimized_ms;
  return l;
}

TEST(LatencyVerdict, KeepsTheOriginalUnlessTheOptimizedGraphRunsFaster) {
  EXPECT_EQ(latency_keeps_original(latencies(2.0, 1.5), 0.005), "");  // 25% faster: written
  const std::string slower = latency_keeps_original(latencies(2.0, 2.2), 0.005);
  EXPECT_NE(slower.find("kept the original graph: measured end to end on NVIDIA H200"), std::string::npos) << slower;
  EXPECT_NE(slower.find("2.2 ms against the original's 2 ms"), std::string::npos) << slower;
  EXPECT_NE(latency_keeps_original(latencies(2.0, 2.0), 0.005), "");     // a tie is no gain
  EXPECT_NE(latency_keeps_original(latencies(2.0, 1.995), 0.005), "");   // 0.25%: below --min-gain 0.5%
  EXPECT_EQ(latency_keeps_original(latencies(2.0, 1.995), 0), "");       // any gain counts at 0
  EXPECT_NE(latency_keeps_original(latencies(2.0, 1.5), 0.3), "");       // 25% is less than 30%
}

}  // namespace
}  // namespace teq
