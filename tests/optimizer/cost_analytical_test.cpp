// The analytical cost model and the cost-model factory: roofline arithmetic checked against hand
// computation from the H200 data-sheet figures, more work costs more, profiles load, bad specs fail clearly.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "optimizer/cost/analytical_cost.h"
#include "optimizer/cost/cost_models.h"
#include "optimizer/engine/extract.h"  // graph_cost
#include "optimizer/cost/measured_cost.h"
#include "optimizer/output_choice.h"
#include "rules/semantics.h"
#include "rules/sexpr.h"

namespace teq {
namespace {

const std::filesystem::path kCorpus = std::filesystem::path(TEQ_SOURCE_DIR) / "corpus";

AnalyticalCostModel h200(Precision p = Precision::Fp32) {
  return AnalyticalCostModel(load_device_profile(kCorpus / "devices" / "h200.json"), p);
}

double cost(const CostModel& m, OpKind op, std::vector<int64_t> attrs, std::vector<Shape> in) {
  Shape out = infer_shape(op, attrs, in);
  return m.node_cost(op, attrs, in, out);
}

double matmul_cost(const CostModel& m, int64_t n) { return cost(m, OpKind::Matmul, {0}, {{n, n}, {n, n}}); }
double conv_cost(const CostModel& m, int64_t c, int64_t k) {
  return cost(m, OpKind::Conv2d, {1, 1, -1, -1, 0}, {{1, c, 28, 28}, {c, c, k, k}});
}

TEST(DeviceProfiles, AllFourLoadWithSources) {
  for (const char* name : {"h200", "a100", "v100", "t4"}) {  // GPU data sheets; cpu-ort is fitted (below)
    DeviceProfile p = load_device_profile(kCorpus / "devices" / (std::string(name) + ".json"));
    EXPECT_EQ(p.name, name);
    EXPECT_GT(p.fp32_tflops, 1);
    EXPECT_GT(p.fp16_tensor_tflops, p.fp32_tflops) << name;
    EXPECT_GT(p.memory_bandwidth_gbs, 100);
    EXPECT_GT(p.launch_overhead_us, 0);
    EXPECT_FALSE(p.sources.empty());
  }
  EXPECT_EQ(device_profile_names(kCorpus / "devices"),
            (std::vector<std::string>{"a100", "cpu-ort", "h200", "t4", "v100"}));
}

TEST(DeviceProfiles, CpuProfileIsFittedToOnnxRuntime) {
  // bench/fit_cpu_profile.py writes it from single-operator timings: a CPU is far below any GPU's rate and
  // its per-operator overhead (the runtime's dispatch) is not the GPUs' assumed 3 us.
  DeviceProfile p = load_device_profile(kCorpus / "devices" / "cpu-ort.json");
  EXPECT_GT(p.fp32_tflops, 0.001);
  EXPECT_LT(p.fp32_tflops, 10);
  EXPECT_GT(p.launch_overhead_us, 0);
  EXPECT_NE(p.launch_overhead_us, 3);
  ASSERT_FALSE(p.sources.empty());
  EXPECT_NE(p.sources[0].find("fit_cpu_profile.py"), std::string::npos);
}

TEST(DeviceProfiles, MissingFieldIsNamed) {
  auto file = std::filesystem::temp_directory_path() / "teq_bad_device.json";
  std::ofstream(file) << R"({"format": "tensor-eqsat-device", "fp32_tflops": 10, "fp16_tensor_tflops": 20,
                             "tf32_tensor_tflops": 0, "launch_overhead_us": 3, "sources": ["x"]})";
  try {
    load_device_profile(file);
    FAIL() << "expected DeviceProfileError";
  } catch (const DeviceProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("memory_bandwidth_gbs: missing"), std::string::npos) << e.what();
  }
  std::ofstream(file) << "{ not json";
  EXPECT_THROW(load_device_profile(file), DeviceProfileError);
  std::filesystem::remove(file);
}

TEST(AnalyticalCost, ComputeBoundMatmulMatchesRoofline) {
  // 1024^3 multiply-adds at 67 TFLOP/s: 2 * 2^30 / 67e12 s, well above 3 * 4 MiB / 4.8 TB/s.
  const double expected = 2.0 * 1024 * 1024 * 1024 / 67e12 + 3e-6;
  EXPECT_NEAR(matmul_cost(h200(), 1024), expected, 1e-9);
}

TEST(AnalyticalCost, MemoryBoundReluMatchesRoofline) {
  // Reads and writes 64*56*56 floats at 4.8 TB/s; the one FLOP per element is negligible.
  const double expected = 2.0 * 64 * 56 * 56 * 4 / 4.8e12 + 3e-6;
  EXPECT_NEAR(cost(h200(), OpKind::Relu, {}, {{1, 64, 56, 56}}), expected, 1e-12);
}

TEST(AnalyticalCost, MoreWorkCostsMore) {
  AnalyticalCostModel m = h200();
  EXPECT_LT(matmul_cost(m, 256), matmul_cost(m, 512));
  EXPECT_LT(matmul_cost(m, 512), matmul_cost(m, 2048));
  EXPECT_LT(conv_cost(m, 64, 3), conv_cost(m, 128, 3));
  EXPECT_LT(conv_cost(m, 128, 1), conv_cost(m, 128, 3));
  EXPECT_LT(conv_cost(m, 256, 3), conv_cost(m, 256, 5));
  // A stride-2 convolution computes a quarter of the outputs.
  EXPECT_LT(cost(m, OpKind::Conv2d, {2, 2, -1, -1, 0}, {{1, 256, 28, 28}, {256, 256, 3, 3}}), conv_cost(m, 256, 3));
}

TEST(AnalyticalCost, LaunchOverheadMakesOneLargeKernelCheaperThanTwoSmall) {
  // The reason merging operators pays: two [1,512]x[512,512] matmuls vs one [1,512]x[512,1024].
  AnalyticalCostModel m = h200();
  double two = 2 * cost(m, OpKind::Matmul, {0}, {{1, 512}, {512, 512}});
  double one = cost(m, OpKind::Matmul, {0}, {{1, 512}, {512, 1024}});
  EXPECT_LT(one, two);
}

TEST(AnalyticalCost, ViewsAreFreeSplitIsTheCopyOnnxSliceIs) {
  AnalyticalCostModel m = h200();
  EXPECT_EQ(cost(m, OpKind::Reshape, {4, 16}, {{8, 8}}), 0);
  EXPECT_GT(cost(m, OpKind::Transpose, {1, 0}, {{8, 8}}), 0);
  // The exporter writes a split as ONNX Slice: priced as that slice (part read, part written, a launch).
  EXPECT_DOUBLE_EQ(cost(m, OpKind::Split, {1, 0, 1}, {{4, 10}, {4, 3}}), cost(m, OpKind::Slice, {1, 0, 3}, {{4, 10}}));
  EXPECT_GT(cost(m, OpKind::Split, {1, 0, 1}, {{4, 10}, {4, 3}}), 0);
}

TEST(AnalyticalCost, TorchExportOperatorsAreWorkedOutByTheirKind) {
  // sqrt, erf, clip: one operation per element, memory-bound like relu; reduce_mean reads every input
  // element once (one add each) and writes the small result; pad is a copy with no arithmetic.
  const Shape x{64, 1024};
  const std::vector<int64_t> relu6{0, 0, 6, 0}, last{1, 1}, cols{0, 1, 0, 1};
  for (OpKind op : {OpKind::Sqrt, OpKind::Erf}) {
    const OpWork w = op_work(op, {}, std::vector<Shape>{x}, x, 4);
    EXPECT_DOUBLE_EQ(w.flops, 64 * 1024) << op_name(op);
    EXPECT_DOUBLE_EQ(w.bytes, 2 * 64 * 1024 * 4) << op_name(op);
  }
  const OpWork clip = op_work(OpKind::Clip, relu6, std::vector<Shape>{x}, x, 4);
  EXPECT_DOUBLE_EQ(clip.flops, 64 * 1024);
  const OpWork mean = op_work(OpKind::ReduceMean, last, std::vector<Shape>{x}, Shape{64, 1}, 4);
  EXPECT_DOUBLE_EQ(mean.flops, 64 * 1024);
  EXPECT_DOUBLE_EQ(mean.bytes, (64 * 1024 + 64) * 4);
  const OpWork pad = op_work(OpKind::Pad, cols, std::vector<Shape>{x}, Shape{64, 1026}, 4);
  EXPECT_DOUBLE_EQ(pad.flops, 0);
  EXPECT_DOUBLE_EQ(pad.bytes, (64 * 1024 + 64 * 1026) * 4);
  EXPECT_TRUE(pad.launches_kernel);
  AnalyticalCostModel m = h200();
  EXPECT_DOUBLE_EQ(cost(m, OpKind::Sqrt, {}, {x}), cost(m, OpKind::Relu, {}, {x}));
}

TEST(AnalyticalCost, ADilatedConvCostsItsTapsNotItsSpan) {
  // Same taps and (SAME, stride 1) the same output: a dilated conv costs what the undilated one costs.
  const std::vector<Shape> in{{1, 64, 28, 28}, {64, 64, 3, 3}};
  EXPECT_DOUBLE_EQ(cost(h200(), OpKind::Conv2d, {1, 1, -1, -1, 0, 2, 2}, in), conv_cost(h200(), 64, 3));
}

TEST(AnalyticalCost, MergeIsACopyOfTheKernelIntoTheLargerOne) {
  // merge reads the kernel once and writes the merged one (zeros included): a memory-bound copy, no FLOPs.
  const double expected = (64.0 * 32 * 3 * 3 + 64.0 * 64 * 3 * 3) * 4 / 4.8e12 + 3e-6;
  EXPECT_NEAR(cost(h200(), OpKind::Merge, {2}, {{64, 32, 3, 3}}), expected, 1e-12);
}

TEST(AnalyticalCost, AFusedActivationCostsWhatTheSeparateOneCosts) {
  // The exporter writes (conv2d ... act) as Conv followed by the activation node: fusing earns nothing. A
  // relu after a convolution or 2-d matmul is an epilogue the runtime fuses back (free), a tanh is not.
  AnalyticalCostModel m = h200();
  const std::vector<Shape> in{{1, 16, 8, 8}, {16, 16, 3, 3}};
  const double plain = cost(m, OpKind::Conv2d, {1, 1, 1, 1, 0}, in);
  EXPECT_DOUBLE_EQ(cost(m, OpKind::Conv2d, {1, 1, 1, 1, 2}, in), plain);
  EXPECT_DOUBLE_EQ(cost(m, OpKind::Conv2d, {1, 1, 1, 1, 3}, in), plain + cost(m, OpKind::Tanh, {}, {{1, 16, 8, 8}}));
  const std::vector<Shape> mm{{8, 32}, {32, 16}};
  EXPECT_DOUBLE_EQ(cost(m, OpKind::Matmul, {3}, mm), cost(m, OpKind::Matmul, {0}, mm) + cost(m, OpKind::Tanh, {}, {{8, 16}}));
  EXPECT_DOUBLE_EQ(cost(m, OpKind::Matmul, {2}, mm), cost(m, OpKind::Matmul, {0}, mm));
  const std::vector<Shape> batched{{4, 8, 32}, {4, 32, 16}};  // a 3-d matmul's relu stays its own kernel
  EXPECT_DOUBLE_EQ(cost(m, OpKind::Matmul, {2}, batched),
                   cost(m, OpKind::Matmul, {0}, batched) + cost(m, OpKind::Relu, {}, {{4, 8, 16}}));
}

/// Graph costs, as extraction and the read-back price them: epilogues in context.
double graph(const CostModel& m, const std::string& sexpr) { return graph_cost(parse_expr(sexpr), m); }
double graph(const CostModelHandle& m, const std::string& sexpr) { return graph(*m, sexpr); }

TEST(AnalyticalCost, BiasAndReluAfterAConvolutionAreFusedIntoIt) {
  // The runtime's policy (RuntimeCost) around the H200 profile, as make_cost_model makes it.
  const CostModelHandle m = make_cost_model(kDefaultCostSpec, kCorpus);
  const std::string x = "(input x 1 16 8 8)", w = "(weight w 16 16 3 3)";
  const std::string conv = "(conv2d 1 1 1 1 0 " + x + " " + w + ")";
  const std::string bias = "(broadcast 1 16 8 8 (reshape 16 1 1 (weight b 16)))";
  const double plain = graph(m, conv);
  EXPECT_DOUBLE_EQ(graph(m, "(relu " + conv + ")"), plain);
  EXPECT_DOUBLE_EQ(graph(m, "(relu (ewadd " + conv + " " + bias + "))"), plain);
  EXPECT_DOUBLE_EQ(graph(m, "(ewadd " + bias + " " + conv + ")"), plain);
  // A residual (any tensor added to a conv's output) is fused too; a relu after a concat is not.
  EXPECT_DOUBLE_EQ(graph(m, "(relu (ewadd " + conv + " (input y 1 16 8 8)))"), plain);
  EXPECT_GT(graph(m, "(ewadd (relu " + x + ") (input y 1 16 8 8))"), 0.0);
  EXPECT_GT(graph(m, "(relu (concat 1 " + conv + " " + conv + "))"), graph(m, "(concat 1 " + conv + " " + conv + ")"));
  // The flops model keeps TASO's conventions: a separate relu is charged.
  FlopCostModel flops;
  EXPECT_GT(graph(flops, "(relu " + conv + ")"), graph(flops, conv));
}

TEST(AnalyticalCost, AConstantScaleOfAMatmulIsFusedIntoIt) {
  // ONNX Gemm's alpha is imported as smul; onnxruntime (Gemm, MatMulScaleFusion) and cuBLAS run it in the
  // product's kernel, so folding it into the weight earns nothing (corpus/models/mlp.onnx measured 0.996).
  const CostModelHandle m = make_cost_model(kDefaultCostSpec, kCorpus);
  const std::string mm = "(matmul 0 (input x 8 32) (weight w 32 16))";
  const double plain = graph(m, mm);
  EXPECT_DOUBLE_EQ(graph(m, "(smul " + mm + " (weight s))"), plain);
  EXPECT_DOUBLE_EQ(graph(m, "(ewadd (smul " + mm + " (weight s)) (weight b 8 16))"), plain);
  EXPECT_DOUBLE_EQ(graph(m, "(relu (smul " + mm + " (weight s)))"), plain);
  // A scale that arrives per run, or of something that is not a product, is its own kernel.
  EXPECT_GT(graph(m, "(smul " + mm + " (input s))"), plain);
  EXPECT_GT(graph(m, "(smul (relu (input x 8 16)) (weight s))"), graph(m, "(relu (input x 8 16))"));
  FlopCostModel flops;
  EXPECT_GT(graph(flops, "(smul " + mm + " (weight s))"), graph(flops, mm));
}

TEST(AnalyticalCost, TensorCoresSpeedUpMatmulOnly) {
  AnalyticalCostModel fp32 = h200(), tf32 = h200(Precision::Tf32);
  EXPECT_LT(matmul_cost(tf32, 2048), matmul_cost(fp32, 2048) / 4);
  EXPECT_DOUBLE_EQ(cost(tf32, OpKind::Relu, {}, {{1, 64, 56, 56}}), cost(fp32, OpKind::Relu, {}, {{1, 64, 56, 56}}));
  EXPECT_EQ(tf32.name(), "analytical:h200:tf32");
  EXPECT_THROW(AnalyticalCostModel(load_device_profile(kCorpus / "devices" / "v100.json"), Precision::Tf32),
               std::invalid_argument);
}

TEST(AnalyticalCost, SlowerDeviceCostsMore) {
  auto t4 = make_cost_model("analytical:t4", kCorpus);
  auto h = make_cost_model("analytical:h200", kCorpus);
  EXPECT_GT(matmul_cost(*t4, 1024), 5 * matmul_cost(*h, 1024));
}

TEST(CostModelFactory, MakesTheNamedModels) {
  EXPECT_EQ(make_cost_model("analytical", kCorpus)->name(), "analytical:h200");
  EXPECT_EQ(make_cost_model(kDefaultCostSpec, kCorpus)->name(), "analytical:h200");
  EXPECT_EQ(make_cost_model("analytical:a100", kCorpus)->name(), "analytical:a100");
  EXPECT_EQ(make_cost_model("analytical:a100:fp16", kCorpus)->name(), "analytical:a100:fp16");
  EXPECT_EQ(make_cost_model("flops", kCorpus)->name(), "flops");
}

// "auto" names the machine it runs on: onnxruntime on this CPU without a GPU (this machine, CI), a GPU's
// profile (or the default GPU model) with one; any other spec passes through unchanged.
TEST(CostModelFactory, AutoIsTheMachineItRunsOn) {
  const ResolvedCostSpec chosen = resolve_cost_spec(kAutoCostSpec, kCorpus);
  EXPECT_FALSE(chosen.why.empty());
  if (!gpu_status().available) {
    EXPECT_EQ(chosen.spec, kCpuCostSpec);
    EXPECT_NE(chosen.why.find("no GPU"), std::string::npos) << chosen.why;
  } else {
    EXPECT_TRUE(chosen.spec.starts_with("analytical:") && chosen.spec != kCpuCostSpec) << chosen.spec;
  }
  EXPECT_EQ(make_cost_model(kAutoCostSpec, kCorpus)->name(), make_cost_model(chosen.spec, kCorpus)->name());
  const ResolvedCostSpec given = resolve_cost_spec("analytical:a100", kCorpus);
  EXPECT_EQ(given.spec, "analytical:a100");
  EXPECT_TRUE(given.why.empty());
}

TEST(CostModelFactory, TargetsNameTheMachineTheModelRunsOn) {
  EXPECT_EQ(cost_spec_for_target("auto", kCorpus), kAutoCostSpec);
  EXPECT_EQ(cost_spec_for_target("cpu", kCorpus), kCpuCostSpec);
  EXPECT_EQ(cost_spec_for_target("a100", kCorpus), "analytical:a100");
  EXPECT_THROW(cost_spec_for_target("cpu-ort", kCorpus), std::invalid_argument);  // a profile, not a target
  try {
    cost_spec_for_target("h100", kCorpus);
    ADD_FAILURE() << "h100 has no profile";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("valid: auto, cpu, cuda, a100, h200, t4, v100"), std::string::npos) << e.what();
  }
  // onnxruntime's CUDA provider: the GPU found here, or an error that names the GPU targets.
  if (gpu_status().available) {
    EXPECT_EQ(cost_spec_for_target("cuda", kCorpus), resolve_cost_spec(kAutoCostSpec, kCorpus).spec);
  } else {
    try {
      cost_spec_for_target("cuda", kCorpus);
      ADD_FAILURE() << "cuda without a GPU";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("no GPU found on this machine; name the GPU the model will run on (a100, h200, t4, v100)"),
                std::string::npos) << e.what();
    }
  }
}

std::string error_of(std::string_view spec) {
  try {
    make_cost_model(spec, kCorpus);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CostModelFactory, UnknownSpecListsValidOnes) {
  for (std::string_view bad : {"bogus", "analytical:h100", "analytical:h200:int8", "analytical:"}) {
    std::string msg = error_of(bad);
    EXPECT_NE(msg.find("unknown cost model '" + std::string(bad) + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("analytical:h200"), std::string::npos) << msg;
    EXPECT_NE(msg.find("flops"), std::string::npos) << msg;
    EXPECT_NE(msg.find("auto"), std::string::npos) << msg;
  }
}

TEST(CostModelFactory, MeasuredWithoutGpuSaysSo) {
  if (gpu_status().available) GTEST_SKIP() << "a GPU is present: the measured model can be built here";
  try {
    make_cost_model("measured", kCorpus);
    FAIL() << "no error for --cost measured without a GPU";
  } catch (const GpuUnavailableError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

TEST(CostModelFactory, DbSpecReadsACostDbAndFallsBackToTheAnalyticalModel) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "teq_factory_db.json";
  const Shape a{64, 128}, b{128, 32};
  CostDb db;
  db.device = "test device";
  db.entries_ms[canonical_cost_key(OpKind::Matmul, std::vector<int64_t>{0}, std::vector<Shape>{a, b}).text] = 2.0;
  db.save(file);
  CostModelHandle model = make_cost_model("db:" + file.string(), kCorpus);
  const std::vector<int64_t> no_act{0};
  EXPECT_DOUBLE_EQ(model->node_cost(OpKind::Matmul, no_act, std::vector<Shape>{a, b}, Shape{64, 32}), 2.0e-3);
  // A node the DB lacks costs what the default analytical model says.
  CostModelHandle analytical = make_cost_model(kDefaultCostSpec, kCorpus);
  const Shape x{8, 8};
  EXPECT_DOUBLE_EQ(model->node_cost(OpKind::Relu, {}, std::vector<Shape>{x}, x),
                   analytical->node_cost(OpKind::Relu, {}, std::vector<Shape>{x}, x));
  std::filesystem::remove(file);
  EXPECT_THROW(make_cost_model("db:" + file.string(), kCorpus), CostDbError);
}

/// The CPU profile (cache_bytes, weight_stream_gbs, fuses_tanh_sigmoid) made for a model of `weight_mb`.
CostModelHandle cpu_ort_for(double weight_mb) {
  return make_cost_model("analytical:cpu-ort", kCorpus, ModelFootprint{.weight_bytes = weight_mb * 1e6});
}

TEST(AnalyticalCost, WeightsOfAModelLargerThanTheCacheAreReadFromMemory) {
  // An RNN cell's matrix-vector product reads its 1 MB weight: from cache in a small model, from memory in a
  // model whose weights outgrow the profile's cache (NasRNN's 84 MB), where it costs several times more.
  const DeviceProfile p = load_device_profile(kCorpus / "devices" / "cpu-ort.json");
  ASSERT_GT(p.cache_bytes, 0);
  ASSERT_GT(p.weight_stream_gbs, 0);
  const CostModelHandle small = cpu_ort_for(p.cache_bytes / 2e6), large = cpu_ort_for(p.cache_bytes / 5e5);
  EXPECT_FALSE(small.streams_weights);
  EXPECT_TRUE(large.streams_weights);
  const std::string mv = "(matmul 0 (input x 1 512) (weight w 512 512))";
  const double cached = graph(*small, mv), streamed = graph(*large, mv);
  EXPECT_DOUBLE_EQ(graph(*large, "(matmul 0 (input x 1 512) (input w 512 512))"), cached);  // a per-run operand
  EXPECT_GT(streamed, 2 * cached);
  EXPECT_NEAR(streamed - p.launch_overhead_us * 1e-6, 512 * 512 * 4 / (p.weight_stream_gbs * 1e9), 1e-6);
  // The weight is read whichever operand it is: w^T x^T reads it as much as x w does.
  EXPECT_NEAR(graph(*large, "(matmul 0 (weight w 512 512) (input x 512 1))"), streamed, 1e-9);
  // A small weight (below kStreamedWeightMinBytes) is priced cache-resident either way.
  const std::string tiny = "(matmul 0 (input x 1 64) (weight w 64 64))";
  EXPECT_DOUBLE_EQ(graph(*large, tiny), graph(*small, tiny));
  // A profile without the fields (the GPU data sheets) never streams.
  EXPECT_FALSE(make_cost_model("analytical:h200", kCorpus, ModelFootprint{.weight_bytes = 1e12}).streams_weights);
}

TEST(AnalyticalCost, OnnxRuntimeFusesTanhAndSigmoidAfterAGemmNotAfterABareMatmul) {
  // onnxruntime's CPU FusedGemm runs the activation of a MatMul + Add; a MatMul alone is no Gemm, and the
  // GPU profiles' runtimes (cuDNN's fused convolution) fuse only relu.
  const CostModelHandle cpu = cpu_ort_for(0), gpu = make_cost_model("analytical:h200", kCorpus);
  const std::string gemm = "(ewadd (matmul 0 (input x 1 512) (weight w 512 512)) (input y 1 512))";
  const std::string bare = "(matmul 0 (input x 1 512) (weight w 512 512))";
  for (const char* act : {"tanh", "sigmoid"}) {
    EXPECT_DOUBLE_EQ(graph(*cpu, "(" + std::string(act) + " " + gemm + ")"), graph(*cpu, gemm)) << act;
    EXPECT_GT(graph(*cpu, "(" + std::string(act) + " " + bare + ")"), graph(*cpu, bare)) << act;
    EXPECT_GT(graph(*gpu, "(" + std::string(act) + " " + gemm + ")"), graph(*gpu, gemm)) << act;
  }
}

TEST(AnalyticalCost, AnRmsNormWrittenWithADivisionIsOneOnnxRuntimeKernel) {
  // x / sqrt(mean(x^2) + eps) * w is one SimplifiedLayerNormalization in onnxruntime (its RMS-norm fusion), priced
  // by the CPU profile as one launch and its norm_kernel_passes element-wise passes over x; with
  // x * reciprocal(sqrt(...)), as PyTorch writes rsqrt, onnxruntime fuses nothing and the seven nodes cost what
  // they cost. The GPU profiles describe other runtimes: no unit there.
  const CostModelHandle cpu = cpu_ort_for(0), gpu = make_cost_model("analytical:h200", kCorpus);
  const std::string x = "(input x 2 16 64)";
  const std::string sd = "(broadcast 2 16 64 (sqrt (ewadd (reduce_mean 1 2 (ewmul " + x + " " + x +
                         ")) (broadcast 2 16 1 (weight eps)))))";
  const std::string gamma = "(broadcast 2 16 64 (weight w 64))";
  const std::string by_division = "(ewmul (ewdiv " + x + " " + sd + ") " + gamma + ")";
  const std::string by_reciprocal = "(ewmul (ewmul " + x + " (reciprocal " + sd + ")) " + gamma + ")";
  const DeviceProfile profile = load_device_profile(kCorpus / "devices" / "cpu-ort.json");
  const double launch = profile.launch_overhead_us * 1e-6;
  const double pass = graph(cpu, "(ewmul (input a 2 16 64) (input b 2 16 64))") - launch;
  const double passes = profile.norm_kernel_passes.at("SimplifiedLayerNormalization");
  EXPECT_NEAR(graph(cpu, by_division), launch + passes * pass, 1e-15);
  EXPECT_GT(graph(cpu, by_reciprocal), graph(cpu, by_division) + 4 * launch);
  EXPECT_GT(graph(gpu, by_division), 4 * graph(gpu, "(ewmul (input a 2 16 64) (input b 2 16 64))"));
  // The normalized value also read elsewhere: the kernel would have to write it too; onnxruntime does not fuse.
  EXPECT_GT(graph(cpu, "(let n (ewdiv " + x + " " + sd + ")) (ewmul n " + gamma + ") (relu n)"),
            graph(cpu, by_division) + 4 * launch);
}

TEST(AnalyticalCost, LayerNormKernelsArePricedAsOnnxRuntimeRunsThem) {
  // A layer norm, with or without its + beta, is one LayerNormalization kernel in onnxruntime; with the residual
  // Add before it (and its beta), one SkipLayerNormalization, which on this CPU costs more than the Add and the
  // LayerNormalization apart (the profile's norm_kernel_passes, measured). So the model says what onnxruntime
  // measures: writing the residual Add apart from a layer norm pays.
  const CostModelHandle cpu = cpu_ort_for(0);
  const DeviceProfile profile = load_device_profile(kCorpus / "devices" / "cpu-ort.json");
  const double launch = profile.launch_overhead_us * 1e-6;
  const double pass = graph(cpu, "(ewmul (input a 2 16 64) (input b 2 16 64))") - launch;
  auto kernel = [&](const char* name) { return launch + profile.norm_kernel_passes.at(name) * pass; };
  const std::string d = "(ewsub x (broadcast 2 16 64 (reduce_mean 1 2 x)))";
  const std::string sd = "(broadcast 2 16 64 (sqrt (ewadd (reduce_mean 1 2 (ewmul d d)) (broadcast 2 16 1 (weight eps)))))";
  const std::string no_beta = "(ewmul (ewdiv d " + sd + ") (broadcast 2 16 64 (weight g 64)))";
  const std::string with_beta = "(ewadd " + no_beta + " (broadcast 2 16 64 (weight b 64)))";
  const std::string input = "(let x (input x 2 16 64)) (let d " + d + ") ";
  EXPECT_NEAR(graph(cpu, input + no_beta), kernel("LayerNormalization"), 1e-15);
  EXPECT_NEAR(graph(cpu, input + with_beta), kernel("LayerNormalization"), 1e-15);
  const std::string residual = "(let x (ewadd (input r 2 16 64) (input y 2 16 64))) (let d " + d + ") ";
  EXPECT_NEAR(graph(cpu, residual + with_beta), kernel("SkipLayerNormalization"), 1e-15);
  const double add = graph(cpu, "(ewadd (input r 2 16 64) (input y 2 16 64))");
  EXPECT_GT(graph(cpu, residual + with_beta), graph(cpu, residual + no_beta));
  EXPECT_NEAR(graph(cpu, residual + no_beta), add + kernel("LayerNormalization"), 1e-15);
}

TEST(DeviceProfiles, StreamingFieldsComeTogether) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "teq_stream_profile.json";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(kCorpus / "devices" / "cpu-ort.json"));
  // `j` written to `file` is refused with an error naming `problem`.
  auto expect_refused = [&](const std::string& problem) {
    std::ofstream(file) << j.dump();
    try {
      load_device_profile(file);
      ADD_FAILURE() << "accepted, expected: " << problem;
    } catch (const DeviceProfileError& e) {
      EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
    }
  };
  j.erase("weight_stream_gbs");
  expect_refused("weight_stream_gbs: missing");
  j["weight_stream_gbs"] = 10;
  j["fuses_tanh_sigmoid"] = "yes";
  expect_refused("fuses_tanh_sigmoid: not true or false");
  j["fuses_tanh_sigmoid"] = true;
  EXPECT_TRUE(load_device_profile(kCorpus / "devices" / "cpu-ort.json").batched_linear_as_gemm);
  EXPECT_FALSE(load_device_profile(kCorpus / "devices" / "h200.json").batched_linear_as_gemm);
  j["batched_linear_as_gemm"] = 1;
  expect_refused("batched_linear_as_gemm: not true or false");
  j["batched_linear_as_gemm"] = true;
  j["norm_kernel_passes"] = 1;
  expect_refused("norm_kernel_passes: not an object");
  j["norm_kernel_passes"] = {{"GroupNormalization", 2}};
  expect_refused("norm_kernel_passes: GroupNormalization: not SimplifiedLayerNormalization");
  j["norm_kernel_passes"] = {{"LayerNormalization", 0}};
  expect_refused("norm_kernel_passes: LayerNormalization: not a positive number");
  std::filesystem::remove(file);
}

// The cpu-ort profile asks for linear layers of a symbolic shape written as Gemm (the GPU profiles do not), from
// the size at which the bias add that form saves costs more than the about three kernels it adds.
TEST(DeviceProfiles, ALinearLayerIsWrittenAsGemmWhereItsBiasAddOutweighsTheKernelsAdded) {
  const CostModelHandle cpu = make_cost_model("analytical:cpu-ort", kCorpus);
  EXPECT_TRUE(cpu.batched_linear_as_gemm);
  EXPECT_FALSE(make_cost_model("analytical:h200", kCorpus).batched_linear_as_gemm);
  auto add = [&](int64_t elements) {
    const Shape shape{elements};
    const std::array<Shape, 2> operands{shape, shape};
    return cpu->node_cost(NodeContext{OpKind::EwAdd, {}, operands, shape});
  };
  const int64_t min = batched_linear_min_elements(*cpu);
  EXPECT_GE(add(min), 4 * add(1));
  EXPECT_LT(add(min / 2), 4 * add(1));
  EXPECT_LT(min, 197 * 768) << "a ViT-base layer's output";
}

}  // namespace
}  // namespace teq
