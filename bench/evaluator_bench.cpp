// Reference evaluator throughput: a conv-relu-conv block evaluated with double (the float reference) and
// with ModInt (rulegen's exact fingerprints), through the one shared semantics. Prints figures only.
#include <benchmark/benchmark.h>

#include <random>

#include "rules/evaluator.h"
#include "rules/sexpr.h"

namespace teq {
namespace {

/// conv3x3(relu) -> conv3x3 with C channels on a [1, C, S, S] image, SAME padding.
Expr conv_relu_conv(int64_t c, int64_t s) {
  const std::string C = std::to_string(c), S = std::to_string(s);
  return parse_expr("(conv2d 1 1 -1 -1 0 (conv2d 1 1 -1 -1 2 (input x 1 " + C + " " + S + " " + S + ") (weight w1 " +
                    C + " " + C + " 3 3)) (weight w2 " + C + " " + C + " 3 3))");
}

template <class S, class Make>
std::map<std::string, Tensor<S>> random_leaves(int64_t c, int64_t s, Make make) {
  std::mt19937 gen(42);
  std::uniform_int_distribution<int> dist(-8, 8);
  auto tensor = [&](Shape shape) {
    Tensor<S> t(shape, make(0));
    for (S& v : t.data) v = make(dist(gen));
    return t;
  };
  return {{"x", tensor({1, c, s, s})}, {"w1", tensor({c, c, 3, 3})}, {"w2", tensor({c, c, 3, 3})}};
}

template <class S, class Make>
void run(benchmark::State& state, Make make) {
  const int64_t c = state.range(0), s = state.range(1);
  const Expr graph = conv_relu_conv(c, s);
  const auto leaves = random_leaves<S>(c, s, make);
  const Arith<S> ar{};
  for (auto _ : state) benchmark::DoNotOptimize(evaluate<S>(graph, ar, leaves));
  // Two convs of c*c*9 multiply-adds per output element.
  const double macs = 2.0 * c * c * 9 * s * s;
  state.counters["MAC/s"] = benchmark::Counter(macs, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_ConvReluConvDouble(benchmark::State& state) {
  run<double>(state, [](int v) { return double(v); });
}
void BM_ConvReluConvModInt(benchmark::State& state) {
  run<ModInt>(state, [](int v) { return ModInt::from_int(v); });
}

BENCHMARK(BM_ConvReluConvDouble)->Args({8, 16})->Args({16, 32})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ConvReluConvModInt)->Args({8, 16})->Args({16, 32})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace teq

BENCHMARK_MAIN();
