#include "rules/import/taso_pb.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "rules/import/detail/source_rule.h"
#include "import/taso_rules.pb.h"  // generated from rules/import/taso_rules.proto

namespace teq {
namespace {

using import_detail::SkipRule;
using import_detail::SourceNode;
using import_detail::SourceRule;

// TASO's OpType and PMParameter numbers (shared/anchors/taso/README.md).
enum TasoOp : int {
  kConv2d = 3, kMaxPool = 6, kAvgPool = 7, kRelu = 8, kSigmoid = 9, kTanh = 10, kConcat = 12, kSplit = 13,
  kTranspose = 15, kEwAdd = 16, kEwMul = 17, kMatmul = 18, kScalarMul = 19, kEnlarge = 20, kImm = 22,
  kIconv = 23, kIone = 24, kCpool = 25,
};
enum TasoParam : int {
  kNumOutputs = 2, kKernelH = 4, kKernelW = 5, kStrideH = 6, kStrideW = 7, kPad = 8, kActi = 9, kNumDim = 10,
  kAxis = 11, kPerm = 12,
};

// Rank of each generator input (x and w1..w3 are matrices, i and w4..w13 NCHW/OIHW, s0 a scalar).
int taso_input_rank(int k) {
  if (k >= 1 && k <= 6) return 2;
  if (k >= 7 && k <= 19) return 4;
  if (k == 20) return 0;
  return -1;
}

// Converts one side (source or target operator list) of a TASO rule into SourceRule nodes.
class SideConverter {
 public:
  SideConverter(SourceRule& rule, const google::protobuf::RepeatedPtrField<taso::Operator>& ops, const char* side)
      : rule_(rule), ops_(ops), side_(side) {}

  /// The node for output `ts` of operator `op_id` (op_id < 0: input -op_id).
  int tensor(int op_id, int ts) {
    if (op_id < 0) {
      std::string name = taso_input_name(-op_id);
      int id = rule_.var(name);
      if (int r = taso_input_rank(-op_id); r >= 0) rule_.var_ranks[name] = r;
      return id;
    }
    if (op_id >= ops_.size()) fail("tensor refers to operator " + std::to_string(op_id) + " of " +
                                   std::to_string(ops_.size()));
    auto key = std::make_pair(op_id, ts);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    if (!active_.insert(op_id).second) fail("operator " + std::to_string(op_id) + " depends on itself");
    int id = convert(ops_[op_id], ts);
    active_.erase(op_id);
    memo_[key] = id;
    return id;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw SkipRule(std::string(side_) + ": " + what); }

  static std::string type_name(int type) {
    static const std::map<int, std::string> names = {
        {0, "Input"}, {1, "Weight"}, {4, "Dropout"}, {11, "BatchNormalization"}, {14, "Reshape"},
        {21, "MergeGConv"}, {26, "Squeeze"}, {27, "Unsqueeze"}};
    auto it = names.find(type);
    return "TASO op type " + std::to_string(type) + (it == names.end() ? "" : " (" + it->second + ")");
  }

  int convert(const taso::Operator& op, int ts) {
    std::map<int, int64_t> para;
    for (const auto& p : op.para()) para[p.key()] = p.value();
    auto get = [&](int key, const char* what) -> int64_t {
      auto it = para.find(key);
      if (it == para.end()) fail(type_name(op.type()) + " lacks parameter " + what);
      return it->second;
    };
    auto pad = [&]() -> int64_t {
      int64_t p = get(kPad, "PAD");
      if (p != 0 && p != 1) fail("PAD must be 0 (SAME) or 1 (VALID), got " + std::to_string(p));
      return p == 0 ? -1 : 0;
    };
    auto acti = [&]() -> int64_t {
      int64_t a = get(kActi, "ACTI");
      if (a < 0 || a > 3) fail("ACTI must be 0..3, got " + std::to_string(a));
      return a;
    };
    auto inputs = [&](int n) {
      if (op.input_size() != n)
        fail(type_name(op.type()) + " has " + std::to_string(op.input_size()) + " inputs, expected " +
             std::to_string(n));
      std::vector<int> out;
      for (const auto& t : op.input()) out.push_back(tensor(t.opid(), t.tsid()));
      return out;
    };
    auto make = [&](OpKind kind, std::vector<int64_t> attrs, std::vector<int> children) {
      SourceNode n;
      n.op = kind;
      n.attrs = std::move(attrs);
      n.children = std::move(children);
      return rule_.add(std::move(n));
    };
    if (op.type() != kSplit && ts != 0)
      fail(type_name(op.type()) + " has one output, output " + std::to_string(ts) + " requested");

    switch (op.type()) {
      case kConv2d: {  // kernel size comes from the weight's shape; KERNEL_H/W are not needed
        int64_t p = pad();
        return make(OpKind::Conv2d, {get(kStrideH, "STRIDE_H"), get(kStrideW, "STRIDE_W"), p, p, acti()},
                    inputs(2));
      }
      case kMaxPool:
      case kAvgPool: {
        int64_t p = pad();
        std::vector<int64_t> attrs = {get(kKernelH, "KERNEL_H"), get(kKernelW, "KERNEL_W"),
                                      get(kStrideH, "STRIDE_H"), get(kStrideW, "STRIDE_W"), p, p};
        if (op.type() == kAvgPool) attrs.push_back(1);  // TASO (cuDNN) averages over the padded window
        int64_t a = acti();
        int pool = make(op.type() == kMaxPool ? OpKind::MaxPool : OpKind::AvgPool, attrs, inputs(1));
        if (a == 0) return pool;
        OpKind act = a == 1 ? OpKind::Sigmoid : a == 2 ? OpKind::Relu : OpKind::Tanh;
        return make(act, {}, {pool});
      }
      case kRelu: return make(OpKind::Relu, {}, inputs(1));
      case kSigmoid: return make(OpKind::Sigmoid, {}, inputs(1));
      case kTanh: return make(OpKind::Tanh, {}, inputs(1));
      case kConcat: {
        if (op.input_size() < 2) fail("concat needs at least two inputs");
        int64_t axis = get(kAxis, "AXIS");
        std::vector<int> in = inputs(op.input_size());
        int id = make(OpKind::Concat, {axis}, in);
        if (para.contains(kNumDim)) {
          int64_t n = para[kNumDim];
          if (n < 1 || n > 16) fail("concat NUMDIM " + std::to_string(n) + " out of range 1..16");
          rule_.nodes[id].rank_hint = static_cast<int>(n);
        }
        return id;
      }
      case kSplit: {
        if (para.contains(kNumOutputs) && para[kNumOutputs] != 2)
          fail("split into " + std::to_string(para[kNumOutputs]) + " parts (only 2 are supported)");
        if (ts != 0 && ts != 1) fail("split output " + std::to_string(ts) + " requested");
        return make(OpKind::Split, {get(kAxis, "AXIS"), ts}, inputs(1));
      }
      case kTranspose: {
        // TASO encodes the permutation as the base-NUMDIM number whose digits are perm[0], perm[1], ...
        int64_t n = get(kNumDim, "NUMDIM"), code = get(kPerm, "PERM");
        if (n < 1 || n > 8) fail("transpose NUMDIM " + std::to_string(n) + " out of range");
        std::vector<int64_t> perm(n);
        for (int64_t i = n; i-- > 0; code /= n) perm[i] = code % n;
        std::set<int64_t> seen(perm.begin(), perm.end());
        if (code != 0 || static_cast<int64_t>(seen.size()) != n || *seen.begin() < 0)
          fail("transpose PERM " + std::to_string(get(kPerm, "PERM")) + " is not a permutation of " +
               std::to_string(n) + " axes");
        return make(OpKind::Transpose, perm, inputs(1));
      }
      case kEwAdd: return make(OpKind::EwAdd, {}, inputs(2));
      case kEwMul: return make(OpKind::EwMul, {}, inputs(2));
      case kMatmul: return make(OpKind::Matmul, {acti()}, inputs(2));
      case kScalarMul: return make(OpKind::Smul, {}, inputs(2));
      case kEnlarge: return make(OpKind::Enlarge, {get(kKernelH, "KERNEL_H"), get(kKernelW, "KERNEL_W")}, inputs(1));
      case kImm: return make(OpKind::Eye, {}, inputs(0));
      case kIone: return make(OpKind::Ones, {}, inputs(0));
      case kIconv:
        return make(OpKind::IConv, {get(kKernelH, "KERNEL_H"), get(kKernelW, "KERNEL_W")}, inputs(0));
      case kCpool:
        return make(OpKind::PoolKernel, {get(kKernelH, "KERNEL_H"), get(kKernelW, "KERNEL_W")}, inputs(0));
      default: fail("unsupported " + type_name(op.type()));
    }
  }

  SourceRule& rule_;
  const google::protobuf::RepeatedPtrField<taso::Operator>& ops_;
  const char* side_;
  std::map<std::pair<int, int>, int> memo_;
  std::set<int> active_;
};

Rule convert_rule(const taso::Rule& r, const std::string& id) {
  // Conversion recurses along operator references; real rules have a handful of operators.
  constexpr int kMaxOps = 1024;
  if (r.srcop_size() > kMaxOps || r.dstop_size() > kMaxOps)
    throw SkipRule("more than " + std::to_string(kMaxOps) + " operators on one side");
  SourceRule src;
  SideConverter lhs(src, r.srcop(), "source"), rhs(src, r.dstop(), "target");
  if (r.mappedoutput_size() == 0) throw SkipRule("no mapped outputs");
  for (const auto& m : r.mappedoutput()) {
    src.lhs.push_back(lhs.tensor(m.srcopid(), m.srctsid()));
    src.rhs.push_back(rhs.tensor(m.dstopid(), m.dsttsid()));
  }
  import_detail::BuiltPatterns pats = import_detail::build_patterns(src);
  Rule rule;
  rule.id = id;
  rule.lhs = std::move(pats.lhs);
  rule.rhs = std::move(pats.rhs);
  validate_rule(rule);
  return rule;
}

// Protobuf accepts many byte strings as a message with only unknown fields (text happens to parse), so
// a RuleCollection must also have no unknown top-level fields.
bool parse_collection(const std::string& bytes, taso::RuleCollection& out) {
  // ParsePartial + IsInitialized: the same check as ParseFromString without protobuf's stderr logging.
  return out.ParsePartialFromString(bytes) && out.IsInitialized() &&
         out.GetReflection()->GetUnknownFields(out).empty();
}

}  // namespace

std::string taso_input_name(int k) {
  if (k >= 1 && k <= 3) return "x" + std::to_string(k);
  if (k >= 4 && k <= 6) return "w" + std::to_string(k - 3);
  if (k >= 7 && k <= 9) return "i" + std::to_string(k - 6);
  if (k >= 10 && k <= 19) return "w" + std::to_string(k - 6);
  if (k == 20) return "s0";
  return "in" + std::to_string(k);
}

ImportResult import_taso_pb_bytes(const std::string& bytes, const std::string& origin) {
  taso::RuleCollection collection;
  if (!parse_collection(bytes, collection))
    throw CorpusError(origin + ": not a TASO rule collection (protobuf GraphSubst.RuleCollection)");
  ImportResult result;
  result.corpus.generator = {{"imported_from", origin}, {"format", "taso-pb"}};
  result.total = static_cast<size_t>(collection.rule_size());
  for (int i = 0; i < collection.rule_size(); ++i) {
    std::string id = "taso-" + std::to_string(i);
    try {
      Rule rule = convert_rule(collection.rule(i), id);
      rule.source = origin + "#" + std::to_string(i);
      result.corpus.rules.push_back(std::move(rule));
    } catch (const SkipRule& e) {
      result.skipped.push_back({id, e.what()});
    } catch (const CorpusError& e) {
      result.skipped.push_back({id, e.what()});
    }
  }
  return result;
}

ImportResult import_taso_pb(const std::filesystem::path& pb) {
  std::ifstream in(pb, std::ios::binary);
  if (!in) throw CorpusError(pb.string() + ": cannot open file");
  std::stringstream buf;
  buf << in.rdbuf();
  try {
    return import_taso_pb_bytes(buf.str(), pb.filename().string());
  } catch (const CorpusError&) {  // only a malformed file throws; name it by its full path
    throw CorpusError(pb.string() + ": not a TASO rule collection (protobuf GraphSubst.RuleCollection)");
  }
}

}  // namespace teq
