// Rule importers (rules/import/): operator mapping, split cuts and constant sizes on small inputs, the
// exact counts on the TASO/Tensat anchor files, and a numeric check that every imported rule's two sides
// compute the same values (reference evaluator, random inputs) on concrete shapes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>

#include <unistd.h>

#include "rules/evaluator.h"
#include "rules/import/load_rules.h"
#include "rules/sexpr.h"

namespace teq {
namespace {

namespace fs = std::filesystem;
const fs::path kAnchors = TEQ_ANCHORS_DIR;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read " << p;
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string lhs_text(const Rule& r, size_t i = 0) { return to_sexpr(r.lhs.at(i), r.lhs.at(i).root()); }
std::string rhs_text(const Rule& r, size_t i = 0) { return to_sexpr(r.rhs.at(i), r.rhs.at(i).root()); }

const Rule& rule_of(const ImportResult& r, const std::string& id) {
  const Rule* rule = r.corpus.find(id);
  if (!rule) throw std::runtime_error("no rule " + id);
  return *rule;
}

std::string reason_of(const ImportResult& r, const std::string& id) {
  for (const ImportIssue& s : r.skipped)
    if (s.rule_id == id) return s.reason;
  return "";
}

size_t count_multi(const RuleCorpus& c) {
  size_t n = 0;
  for (const Rule& r : c.rules) n += r.is_multi();
  return n;
}

// --- numeric check -------------------------------------------------------------------------------------

// TASO's generator inputs (shared/anchors/taso/README.md); Tensat's ?input_k is TASO's input k.
std::optional<Shape> generator_shape(const std::string& var) {
  std::string name = var;
  if (name.rfind("input_", 0) == 0) name = taso_input_name(std::stoi(name.substr(6)));
  if (name == "s0") return Shape{};
  if (name.size() < 2) return std::nullopt;
  int k = std::atoi(name.c_str() + 1);
  switch (name[0]) {
    case 'x': return Shape{2, 4};
    case 'i': return Shape{2, 4, 5, 5};
    case 'w':
      if (k <= 3) return Shape{4, 4};
      if (k <= 6) return Shape{4, 4, 3, 3};
      if (k <= 9) return Shape{4, 4, 1, 3};
      if (k <= 12) return Shape{4, 4, 3, 1};
      return Shape{4, 1, 3, 3};
    default: return std::nullopt;
  }
}

// Other shapes to try; several with distinct sizes, so that a split cut at the wrong tensor shows.
const std::vector<Shape> kShapePool = {
    {2, 4}, {4, 4}, {2, 4, 5, 5}, {4, 4, 3, 3}, {4, 1, 3, 3}, {}, {4, 2}, {3, 4}, {4, 3}, {3, 3}, {2, 3},
    {4, 4, 1, 3}, {4, 4, 3, 1}, {2, 6, 5, 5}, {6, 4, 3, 3}, {2, 2, 5, 5}, {4, 2, 3, 3}, {2, 4, 6, 7}, {6, 6, 3, 3},
};

// Every pattern well-shaped and each lhs/rhs pair of equal shape.
bool shapes_fit(const Rule& rule, const VarShapes& vs) {
  for (size_t i = 0; i < rule.lhs.size(); ++i) {
    auto l = try_infer_shapes(rule.lhs[i], vs);
    auto r = try_infer_shapes(rule.rhs[i], vs);
    if (!l || !r || (*l)[rule.lhs[i].root().value] != (*r)[rule.rhs[i].root().value]) return false;
  }
  return true;
}

// Group count of every conv2d in the rule's patterns under these shapes (which must fit).
std::vector<int64_t> conv_groups(const Rule& rule, const VarShapes& vs) {
  std::vector<int64_t> out;
  for (const auto* side : {&rule.lhs, &rule.rhs})
    for (const Expr& p : *side) {
      std::vector<Shape> shapes = infer_shapes(p, vs);
      for (const ExprNode& n : p.nodes())
        if (n.op == OpKind::Conv2d) out.push_back(shapes[n.children[0].value][1] / shapes[n.children[1].value][1]);
    }
  return out;
}

// The assignment closest to the generator's shapes (fewest, earliest substitutions from the pool).
std::optional<VarShapes> find_shapes(const Rule& rule) {
  std::vector<std::string> vars = rule.variables();
  std::vector<std::vector<Shape>> cands;
  for (const std::string& v : vars) {
    std::vector<Shape> c;
    if (auto g = generator_shape(v)) c.push_back(*g);
    for (const Shape& s : kShapePool)
      if (std::find(c.begin(), c.end(), s) == c.end()) c.push_back(s);
    cands.push_back(std::move(c));
  }
  std::vector<size_t> idx(vars.size(), 0);
  int tries = 0;
  std::optional<VarShapes> found;
  // All index vectors whose entries sum to `budget`, for budget = 0, 1, 2, ...
  std::function<bool(size_t, int)> visit = [&](size_t v, int budget) -> bool {
    if (v == vars.size()) {
      if (budget != 0) return false;
      if (++tries > 20000) return true;
      VarShapes vs;
      for (size_t k = 0; k < vars.size(); ++k) vs[vars[k]] = cands[k][idx[k]];
      if (!shapes_fit(rule, vs)) return false;
      found = vs;
      return true;
    }
    for (int i = 0; i <= budget && i < static_cast<int>(cands[v].size()); ++i) {
      idx[v] = i;
      if (visit(v + 1, budget - i)) return true;
    }
    return false;
  };
  for (int budget = 0; budget <= 6 && !found && tries <= 20000; ++budget) visit(0, budget);
  return found;
}

// Whether both sides agree on random inputs of these shapes.
bool sides_agree(const Rule& rule, const VarShapes& vs, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::map<std::string, Tensor<double>> leaves;
  for (const auto& [name, shape] : vs) {
    Tensor<double> t(shape, 0.0);
    for (double& x : t.data) x = dist(rng);
    leaves.emplace(name, std::move(t));
  }
  for (size_t i = 0; i < rule.lhs.size(); ++i) {
    Tensor<double> l = evaluate<double>(rule.lhs[i], Arith<double>{}, leaves).at(0);
    Tensor<double> r = evaluate<double>(rule.rhs[i], Arith<double>{}, leaves).at(0);
    if (l.shape != r.shape) return false;
    for (size_t k = 0; k < l.data.size(); ++k)
      if (std::abs(l.data[k] - r.data[k]) > 1e-9 * (1 + std::abs(l.data[k]))) return false;
  }
  return true;
}

struct NumericReport {
  size_t agree = 0, no_shapes = 0, assignments = 0;
  std::vector<std::string> disagreeing;      // differ on the first shapes found (the generator's, or nearest)
  std::vector<std::string> shape_dependent;  // agree there, differ on other shapes that fit both sides
  std::vector<std::string> unshaped;         // no shapes found under which both sides are well-shaped
};

// Each rule on the shapes find_shapes picks, then on up to 3 variations with other pool shapes of the
// same rank that keep every conv's group count (a rule about ordinary convs says nothing about grouped
// ones). A rule "agrees" when it agrees on the first shapes; rules that TASO's generator found on its
// own shapes may hold only there (grouped convs over concatenated inputs need equal group sizes).
NumericReport check_numerically(const RuleCorpus& corpus) {
  NumericReport rep;
  std::mt19937 rng(12345);
  for (const Rule& rule : corpus.rules) {
    std::optional<VarShapes> base = find_shapes(rule);
    if (!base) {
      ++rep.no_shapes;
      rep.unshaped.push_back(rule.id);
      continue;
    }
    ++rep.assignments;
    if (!sides_agree(rule, *base, rng)) {
      rep.disagreeing.push_back(rule.id);
      continue;
    }
    ++rep.agree;
    const std::vector<int64_t> groups = conv_groups(rule, *base);
    std::vector<VarShapes> tried = {*base};
    for (int attempt = 0; attempt < 40 && tried.size() < 4; ++attempt) {
      VarShapes vs = *base;
      for (int m = 0; m < 2; ++m) {
        auto it = std::next(vs.begin(), rng() % vs.size());
        std::vector<Shape> same_rank;
        for (const Shape& s : kShapePool)
          if (s.size() == it->second.size()) same_rank.push_back(s);
        it->second = same_rank[rng() % same_rank.size()];
      }
      if (std::find(tried.begin(), tried.end(), vs) != tried.end() || !shapes_fit(rule, vs) ||
          conv_groups(rule, vs) != groups)
        continue;
      tried.push_back(vs);
      ++rep.assignments;
      if (!sides_agree(rule, vs, rng)) {
        rep.shape_dependent.push_back(rule.id);
        break;
      }
    }
  }
  return rep;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

void print_report(const std::string& name, const ImportResult& r, const NumericReport* num = nullptr) {
  std::cout << "[import] " << name << ": total " << r.total << ", imported " << r.corpus.rules.size() << " ("
            << count_multi(r.corpus) << " multi-pattern), skipped " << r.skipped.size() << "\n";
  std::map<std::string, int> reasons;
  for (const ImportIssue& s : r.skipped) ++reasons[s.reason];
  for (const auto& [reason, n] : reasons) std::cout << "[import]   " << n << " x " << reason << "\n";
  if (num)
    std::cout << "[import]   numeric check (" << num->assignments << " shape assignments): " << num->agree
              << " agree, " << num->disagreeing.size() << " disagree [" << join(num->disagreeing) << "], "
              << num->no_shapes << " without shapes [" << join(num->unshaped) << "]; shape-dependent ["
              << join(num->shape_dependent) << "]\n";
}

// --- Tensat text ---------------------------------------------------------------------------------------

TEST(TensatImport, MapsOperatorsAndAttributes) {
  ImportResult r = import_tensat_rules(
      "(relu (conv2d 1 2 0 0 ?input_7 ?input_10))=>(conv2d 1 2 0 2 ?input_7 ?input_10)\n"
      "(conv2d 2 2 1 3 ?input_7 ?input_10)=>(tanh (sigmoid (conv2d 2 2 1 3 ?input_7 ?input_10)))\n"
      "(matmul 2 (concat 1 2 ?a ?b) ?c)=>(ewmul (ewadd ?a ?a) ?b)\n",
      "", "t.txt");
  ASSERT_EQ(r.total, 3u);
  ASSERT_EQ(r.corpus.rules.size(), 3u) << (r.skipped.empty() ? "" : r.skipped[0].reason);
  const Rule& a = rule_of(r, "tensat-1");
  EXPECT_EQ(lhs_text(a), "(relu (conv2d 1 2 -1 -1 0 ?input_7 ?input_10))");  // pad 0 = SAME
  EXPECT_EQ(rhs_text(a), "(conv2d 1 2 -1 -1 2 ?input_7 ?input_10)");
  EXPECT_EQ(a.source, "t.txt:1");
  const Rule& b = rule_of(r, "tensat-2");
  EXPECT_EQ(lhs_text(b), "(conv2d 2 2 0 0 3 ?input_7 ?input_10)");  // pad 1 = VALID
  EXPECT_EQ(rhs_text(b), "(tanh (sigmoid (conv2d 2 2 0 0 3 ?input_7 ?input_10)))");
  const Rule& c = rule_of(r, "tensat-3");
  EXPECT_EQ(lhs_text(c), "(matmul 2 (concat 1 ?a ?b) ?c)");  // concat's ndim dropped
  EXPECT_EQ(rhs_text(c), "(ewmul (ewadd ?a ?a) ?b)");
}

TEST(TensatImport, DerivesSplitCutsFromConcats) {
  ImportResult r = import_tensat_rules(
      "",
      "(matmul 0 ?input_1 ?input_4)=>(split_0 (split 1 (matmul 0 ?input_1 (concat 1 2 ?input_4 ?input_5))))\n"
      "(matmul 0 ?input_1 ?input_5)=>(split_1 (split 1 (matmul 0 ?input_1 (concat 1 2 ?input_4 ?input_5))))\n"
      "(conv2d 1 1 0 0 ?input_7 ?input_10)=>(split_0 (split 1 (conv2d 1 1 0 0 ?input_7 (concat 0 4 ?input_10 ?input_11))))\n"
      "(conv2d 1 1 0 0 ?input_7 ?input_11)=>(split_1 (split 1 (conv2d 1 1 0 0 ?input_7 (concat 0 4 ?input_10 ?input_11))))\n"
      "(relu (conv2d 1 1 0 0 ?input_7 ?input_10))=>(split_0 (split 0 (relu (conv2d 1 1 0 0 (concat 0 4 ?input_7 ?input_8) ?input_10))))\n"
      "(relu (conv2d 1 1 0 0 ?input_8 ?input_10))=>(split_1 (split 0 (relu (conv2d 1 1 0 0 (concat 0 4 ?input_7 ?input_8) ?input_10))))\n",
      "m.txt");
  ASSERT_EQ(r.corpus.rules.size(), 3u) << (r.skipped.empty() ? "" : r.skipped[0].reason);
  const Rule& mm = rule_of(r, "tensat-multi-1");
  ASSERT_TRUE(mm.is_multi());
  // matmul: output axis 1 comes from the second operand's axis 1, which was concatenated after ?input_4.
  EXPECT_EQ(rhs_text(mm, 0), "(split 1 0 1 (matmul 0 ?input_1 (concat 1 ?input_4 ?input_5)) ?input_4)");
  EXPECT_EQ(rhs_text(mm, 1), "(split 1 1 1 (matmul 0 ?input_1 (concat 1 ?input_4 ?input_5)) ?input_4)");
  EXPECT_EQ(mm.source, "m.txt:1");
  // conv: output channels (axis 1) come from the weight's axis 0; the batch (axis 0) from the input's.
  const Rule& cw = rule_of(r, "tensat-multi-2");
  EXPECT_EQ(rhs_text(cw, 0), "(split 1 0 0 (conv2d 1 1 -1 -1 0 ?input_7 (concat 0 ?input_10 ?input_11)) ?input_10)");
  EXPECT_EQ(lhs_text(cw, 1), "(conv2d 1 1 -1 -1 0 ?input_7 ?input_11)");
  const Rule& cx = rule_of(r, "tensat-multi-3");
  EXPECT_EQ(rhs_text(cx, 1),
            "(split 0 1 0 (relu (conv2d 1 1 -1 -1 0 (concat 0 ?input_7 ?input_8) ?input_10)) ?input_7)");
  // Unequal sizes on both sides of each cut: a cut at the wrong tensor would not agree.
  std::mt19937 rng(2);
  EXPECT_TRUE(sides_agree(mm, {{"input_1", {2, 3}}, {"input_4", {3, 2}}, {"input_5", {3, 5}}}, rng));
  EXPECT_TRUE(sides_agree(cw, {{"input_7", {1, 2, 4, 4}}, {"input_10", {3, 2, 3, 3}}, {"input_11", {1, 2, 3, 3}}}, rng));
  EXPECT_TRUE(sides_agree(cx, {{"input_7", {3, 2, 4, 4}}, {"input_8", {1, 2, 4, 4}}, {"input_10", {2, 2, 3, 3}}}, rng));
}

TEST(TensatImport, SplitOfASplitCutsAtTheInnerConcat) {
  ImportResult r = import_tensat_rules(
      "(split_0 (split 0 (split_0 (split 0 (concat 0 2 (concat 0 2 ?a ?b) ?c)))))=>?a", "", "n.txt");
  ASSERT_EQ(r.corpus.rules.size(), 1u) << (r.skipped.empty() ? "" : r.skipped[0].reason);
  const Rule& rule = r.corpus.rules[0];
  EXPECT_EQ(lhs_text(rule), "(split 0 0 0 (split 0 0 0 (concat 0 (concat 0 ?a ?b) ?c) (concat 0 ?a ?b)) ?a)");
  // Unequal sizes, so a cut at the wrong tensor would give the wrong shape or values.
  std::mt19937 rng(1);
  EXPECT_TRUE(sides_agree(rule, {{"a", {1, 3}}, {"b", {2, 3}}, {"c", {4, 3}}}, rng));
}

TEST(TensatImport, ReportsEveryRuleItCannotConvert) {
  ImportResult r = import_tensat_rules(
      "(relu ?a)=>(split_0 (split 0 (relu ?a)))\n"
      "\n"
      "(frobnicate ?a 3 3 1 1 0 0)=>?a\n"
      "(relu ?a=>(relu ?a)\n"
      "(relu ?a)\n"
      "(relu ?a)=>(relu ?b)\n" +
          std::string(300, '(') + "relu ?a" + std::string(300, ')') + "=>?a\n",
      "(relu ?a)=>(relu ?a)\n(relu ?b)=>(relu ?b)\n(relu ?c)=>(relu ?c)\n", "bad.txt");
  EXPECT_EQ(r.total, 8u);  // 6 single (the blank line is not a rule) + 2 multi
  EXPECT_EQ(r.corpus.rules.size(), 1u);
  EXPECT_EQ(r.corpus.rules.size() + r.skipped.size(), r.total);
  EXPECT_NE(reason_of(r, "tensat-1").find("split on axis 0: no concat boundary in (relu ?a)"), std::string::npos)
      << reason_of(r, "tensat-1");
  EXPECT_NE(reason_of(r, "tensat-3").find("unsupported Tensat operator 'frobnicate' (line 3)"), std::string::npos)
      << reason_of(r, "tensat-3");
  EXPECT_NE(reason_of(r, "tensat-4").find("parse error"), std::string::npos) << reason_of(r, "tensat-4");
  EXPECT_NE(reason_of(r, "tensat-5").find("lhs=>rhs"), std::string::npos) << reason_of(r, "tensat-5");
  EXPECT_NE(reason_of(r, "tensat-6").find("?b is not bound"), std::string::npos) << reason_of(r, "tensat-6");
  EXPECT_NE(reason_of(r, "tensat-7").find("nested deeper than 256"), std::string::npos) << reason_of(r, "tensat-7");
  EXPECT_NE(reason_of(r, "tensat-multi-2").find("no partner"), std::string::npos);
  ASSERT_NE(r.corpus.find("tensat-multi-1"), nullptr);
  EXPECT_EQ(r.corpus.find("tensat-multi-1")->source, "bad.txt-multi:1");
}

// Every operator of Tensat's language (its src/model.rs), in Tensat's argument order, and what it becomes.
TEST(TensatImport, MapsEveryOperatorOfTensatsLanguage) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"(ewadd ?a ?b)", "(ewadd ?a ?b)"},
      {"(ewmul ?a ?b)", "(ewmul ?a ?b)"},
      {"(smul ?a ?s)", "(smul ?a ?s)"},
      // (transpose input perm shuffle): the permutation is a name d1_d2_..; shuffle is a layout hint.
      {"(transpose ?a 1_0 1)", "(transpose 1 0 ?a)"},
      {"(transpose ?a 0_2_1_3 0)", "(transpose 0 2 1 3 ?a)"},
      {"(matmul 2 ?a ?b)", "(matmul 2 ?a ?b)"},
      // (conv2d sh sw pad act input weight): pad 0 SAME = -1 -1, 1 VALID = 0 0; act 0 none 1 sigmoid ..
      {"(conv2d 2 1 1 3 ?x ?w)", "(conv2d 2 1 0 0 3 ?x ?w)"},
      {"(conv2d 1 1 0 1 ?x ?w)", "(conv2d 1 1 -1 -1 1 ?x ?w)"},
      // (enlarge w ref): ref's kernel size where the text fixes it, else 3x3; ref itself is dropped.
      {"(conv2d 1 1 0 0 ?x (enlarge ?w ?r))", "(conv2d 1 1 -1 -1 0 ?x (enlarge 3 3 ?w))"},
      {"(conv2d 1 1 0 0 ?x (enlarge ?w (Iconv 5 5)))", "(conv2d 1 1 -1 -1 0 ?x (enlarge 5 5 ?w))"},
      {"(conv2d 1 1 0 0 ?x (enlarge ?w (enlarge ?v (Cpool 1 5))))", "(conv2d 1 1 -1 -1 0 ?x (enlarge 1 5 ?w))"},
      {"(dropout (relu ?a))", "(relu ?a)"},
      {"(relu ?a)", "(relu ?a)"},
      {"(tanh ?a)", "(tanh ?a)"},
      {"(sigmoid ?a)", "(sigmoid ?a)"},
      // (poolmax input kh kw sh sw pad act): the activation wraps the pool; average pools exclude padding.
      {"(poolmax ?a 3 3 1 1 0 0)", "(maxpool 3 3 1 1 -1 -1 ?a)"},
      {"(poolmax ?a 3 1 2 1 1 2)", "(relu (maxpool 3 1 2 1 0 0 ?a))"},
      {"(poolavg ?a 3 3 2 2 0 1)", "(sigmoid (avgpool 3 3 2 2 -1 -1 0 ?a))"},
      {"(poolavg ?a 1 3 1 2 1 3)", "(tanh (avgpool 1 3 1 2 0 0 0 ?a))"},
      {"(concat 1 2 ?a ?b)", "(concat 1 ?a ?b)"},
      {"(concat3 0 2 ?a ?b ?c)", "(concat 0 ?a ?b ?c)"},
      {"(concat4 1 3 ?a ?b ?c ?d)", "(concat 1 ?a ?b ?c ?d)"},
      {"(concat5 2 4 ?a ?b ?c ?d ?e)", "(concat 2 ?a ?b ?c ?d ?e)"},
      {"(split_0 (split 1 (concat 1 2 ?a ?b)))", "(split 1 0 1 (concat 1 ?a ?b) ?a)"},
      {"(split_1 (split 0 (concat 0 2 ?a ?b)))", "(split 0 1 0 (concat 0 ?a ?b) ?a)"},
      {"(conv2d 1 1 1 0 ?x (Cpool 3 3))", "(conv2d 1 1 0 0 0 ?x (pool_kernel 3 3 ?x))"},
      {"(conv2d 1 1 0 0 ?x (Iconv 1 3))", "(conv2d 1 1 -1 -1 0 ?x (iconv 1 3 ?x))"},
      {"(matmul 0 ?a Imatmul)", "(matmul 0 ?a (eye ?a))"},
      {"(matmul 0 ?a (Imatmul))", "(matmul 0 ?a (eye ?a))"},
      {"(ewmul ?a Iewmul)", "(ewmul ?a (ones ?a))"},
      {"(reshape ?a 2_6)", "(reshape 2 6 ?a)"},
      {"(noop ?a ?b)", "(noop ?a ?b)"},
      {"(batchnorm ?x ?s ?b ?m ?v)", "(batchnorm ?x ?s ?b ?m ?v)"},
      // (merge w count): TASO's merge_gconv, ours takes the count first.
      {"(merge ?w 2)", "(merge 2 ?w)"},
  };
  std::string text;
  for (const auto& [tensat, ours] : cases) text += tensat + "=>" + tensat + "\n";
  ImportResult r = import_tensat_rules(text, "", "ops.txt");
  ASSERT_EQ(r.total, cases.size());
  for (const ImportIssue& s : r.skipped) ADD_FAILURE() << s.rule_id << ": " << s.reason;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Rule* rule = r.corpus.find("tensat-" + std::to_string(i + 1));
    if (!rule) continue;  // reported above
    EXPECT_EQ(lhs_text(*rule), cases[i].second) << cases[i].first;
    EXPECT_EQ(rhs_text(*rule), cases[i].second) << cases[i].first;
  }
}

// What has no counterpart is refused with the operator's name and line; malformed uses say what is wrong.
TEST(TensatImport, RefusesWhatHasNoCounterpartWithNameAndLine) {
  ImportResult r = import_tensat_rules(
      "(conv2d 1 1 0 0 ?x ?w)=>(conv2d 1 1 0 0 ?x (merge ?w 0))\n"
      "(ewadd (input x@2_4) ?a)=>(ewadd ?a (input x@2_4))\n"
      "\n"
      "(relu (weight w@4_4))=>(relu (weight w@4_4))\n"
      "(transpose ?a 1_1 0)=>?a\n"
      "(transpose ?a ?p 0)=>?a\n"
      "(transpose ?a 1_0 2)=>?a\n"
      "(poolmax ?a 3 3 1 1 2 0)=>?a\n"
      "(poolavg ?a 3 3 1 1 0)=>?a\n"
      "(reshape ?a 2_0)=>?a\n"
      "(conv2d 1 1 0 0 ?x ?w)=>(conv2d 1 1 0 0 ?x (enlarge ?w ?r))\n"
      "(concat3 0 2 ?a ?b)=>?a\n"
      "(dropout (dropout ?a))=>?a\n",
      "(relu ?a)=>(relu ?a)\n(relu ?b)=>(ewadd ?b (weight w@2_2))\n", "no.txt");
  EXPECT_EQ(r.total, 13u);
  EXPECT_TRUE(r.corpus.rules.empty());
  auto expect = [&](const std::string& id, const std::string& text) {
    EXPECT_NE(reason_of(r, id).find(text), std::string::npos) << id << ": " << reason_of(r, id);
  };
  expect("tensat-1", "merge: count must be >= 1");
  expect("tensat-2", "Tensat operator 'input' (line 2) is not imported: a graph leaf");
  expect("tensat-4", "Tensat operator 'weight' (line 4) is not imported");
  expect("tensat-5", "transpose: not a permutation");
  expect("tensat-6", "the permutation must be written out");
  expect("tensat-7", "shuffle must be 0 or 1");
  expect("tensat-8", "pad code must be 0 (SAME) or 1 (VALID)");
  expect("tensat-9", "poolavg takes its input, then kernel h/w, stride h/w, pad code and activation");
  expect("tensat-10", "reshape: dimensions must be >= 1");
  // The reference kernel is not part of our pattern; that ?r is unbound must still be seen.
  expect("tensat-11", "variable ?r is not bound by the lhs");
  expect("tensat-12", "concat3 takes 2 integer(s) and 3 operand(s)");
  expect("tensat-13", "line 13: the lhs (dropout (dropout ?a)) is a variable here");
  expect("tensat-multi-1", "Tensat operator 'weight' (line 2)");  // the line within the multi text
}

// Tensat's hand-written rules (src/rewrites.rs PRE_DEFINED_MULTI and PRE_DEFINED_RULES), as data files.
TEST(TensatImport, PredefinedRulesImport) {
  ImportResult multi = load_rules_file(kAnchors / "tensat/predefined_multi.txt");
  EXPECT_EQ(multi.total, 2u);
  for (const ImportIssue& s : multi.skipped) ADD_FAILURE() << s.rule_id << ": " << s.reason;
  ASSERT_EQ(count_multi(multi.corpus), 2u);
  const Rule& a = rule_of(multi, "tensat-multi-1");
  EXPECT_EQ(lhs_text(a, 1), "(conv2d 1 1 -1 -1 0 ?input_1 ?input_3)");
  EXPECT_EQ(rhs_text(a, 0), "(split 1 0 0 (conv2d 1 1 -1 -1 0 ?input_1 (concat 0 (enlarge 3 3 ?input_2) ?input_3)) "
                            "(enlarge 3 3 ?input_2))");
  EXPECT_EQ(rhs_text(a, 1), "(split 1 1 0 (conv2d 1 1 -1 -1 0 ?input_1 (concat 0 (enlarge 3 3 ?input_2) ?input_3)) "
                            "(enlarge 3 3 ?input_2))");
  EXPECT_EQ(lhs_text(rule_of(multi, "tensat-multi-2")), "(conv2d 1 1 -1 -1 2 ?input_1 ?input_2)");
  // A 1x1 and a 3x3 kernel batched, unequal output channels: both outputs agree for an ungrouped conv,
  // and not for a grouped one (the rules concatenate convolution weights: rules/rule_scope.h).
  std::mt19937 rng(3);
  for (const Rule& rule : multi.corpus.rules) {
    EXPECT_TRUE(sides_agree(rule, {{"input_1", {1, 2, 5, 4}}, {"input_2", {3, 2, 1, 1}}, {"input_3", {1, 2, 3, 3}}}, rng))
        << rule.id;
    EXPECT_FALSE(sides_agree(rule, {{"input_1", {1, 4, 5, 4}}, {"input_2", {2, 2, 1, 1}}, {"input_3", {2, 2, 3, 3}}}, rng))
        << rule.id;
  }
  // The merge rules: conv(x, w) = conv(x, merge(w, 2)) for two strides, with and without a fused relu.
  ImportResult merge = load_rules_file(kAnchors / "tensat/predefined_rules.txt");
  EXPECT_EQ(merge.total, 4u);
  for (const ImportIssue& s : merge.skipped) ADD_FAILURE() << s.rule_id << ": " << s.reason;
  ASSERT_EQ(merge.corpus.rules.size(), 4u);
  EXPECT_EQ(lhs_text(rule_of(merge, "tensat-1")), "(conv2d 1 1 -1 -1 0 ?input_1 ?input_2)");
  EXPECT_EQ(rhs_text(rule_of(merge, "tensat-1")), "(conv2d 1 1 -1 -1 0 ?input_1 (merge 2 ?input_2))");
  EXPECT_EQ(rhs_text(rule_of(merge, "tensat-4")), "(conv2d 2 2 -1 -1 2 ?input_1 (merge 2 ?input_2))");
  // Upstream TASO's layout gives the conv back for exactly 2 groups, not for 4; an ungrouped conv cannot
  // take the merged weight (its rhs is ill-shaped, so the rule never applies to one).
  for (const Rule& rule : merge.corpus.rules) {
    EXPECT_TRUE(sides_agree(rule, {{"input_1", {1, 4, 5, 4}}, {"input_2", {4, 2, 3, 3}}}, rng)) << rule.id;
    EXPECT_FALSE(sides_agree(rule, {{"input_1", {1, 8, 5, 4}}, {"input_2", {4, 2, 3, 3}}}, rng)) << rule.id;
    EXPECT_THROW(infer_shapes(rule.rhs[0], {{"input_1", {1, 2, 5, 4}}, {"input_2", {4, 2, 3, 3}}}), ShapeError)
        << rule.id;
  }
}

TEST(TensatImport, AnchorFilesImportCompletelyAndHoldNumerically) {
  ImportResult r = import_tensat_rules(read_file(kAnchors / "tensat/converted.txt"),
                                       read_file(kAnchors / "tensat/converted_multi.txt"), "converted.txt");
  NumericReport num = check_numerically(r.corpus);
  print_report("Tensat converted.txt + converted_multi.txt", r, &num);
  EXPECT_EQ(r.total, 133u);
  EXPECT_EQ(r.corpus.rules.size(), 133u);
  EXPECT_EQ(count_multi(r.corpus), 13u);
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_NE(r.corpus.find("tensat-120"), nullptr);
  EXPECT_NE(r.corpus.find("tensat-multi-13"), nullptr);
  EXPECT_EQ(rule_of(r, "tensat-120").source, "converted.txt:120");
  EXPECT_EQ(num.agree, 133u) << "disagree: " << join(num.disagreeing) << "; no shapes: " << join(num.unshaped);
  // The only rules that hold on the generator's shapes alone: grouped conv over concatenated inputs,
  // which needs both groups equally large (TASO's verifier cannot prove them either, TASO issue #62).
  const std::set<std::string> grouped_conv = {"tensat-92", "tensat-93", "tensat-118", "tensat-119"};
  for (const std::string& id : num.shape_dependent) EXPECT_TRUE(grouped_conv.contains(id)) << id;
}

// --- TASO protobuf -------------------------------------------------------------------------------------

TEST(TasoImport, Released133ImportCompletelyAndHoldNumerically) {
  ImportResult r = import_taso_pb(kAnchors / "taso/graph_subst.pb");
  NumericReport num = check_numerically(r.corpus);
  print_report("TASO graph_subst.pb (released)", r, &num);
  EXPECT_EQ(r.total, 133u);
  EXPECT_EQ(r.corpus.rules.size(), 133u);
  EXPECT_EQ(count_multi(r.corpus), 13u);
  for (const ImportIssue& s : r.skipped) ADD_FAILURE() << s.rule_id << ": " << s.reason;
  EXPECT_EQ(rule_of(r, "taso-0").source, "graph_subst.pb#0");
  EXPECT_EQ(lhs_text(rule_of(r, "taso-0")), "(matmul 0 (matmul 0 ?x1 ?w1) ?w2)");
  const Rule& split = rule_of(r, "taso-127");  // two outputs, split of a conv over concatenated weights
  ASSERT_EQ(split.lhs.size(), 2u);
  EXPECT_EQ(rhs_text(split, 1), "(split 1 1 0 (conv2d 1 1 -1 -1 0 ?i1 (concat 0 ?w4 ?w5)) ?w4)");
  EXPECT_EQ(num.agree, 133u) << "disagree: " << join(num.disagreeing) << "; no shapes: " << join(num.unshaped);
  const std::set<std::string> grouped_conv = {"taso-99", "taso-100", "taso-130", "taso-131"};
  for (const std::string& id : num.shape_dependent) EXPECT_TRUE(grouped_conv.contains(id)) << id;
}

TEST(TasoImport, GeneratedSetsReportEveryRule) {
  struct Set {
    const char* file;
    size_t total;
  };
  for (Set set : {Set{"taso/generated_graph_subst_f11782c.pb", 619}, Set{"tensat/tensat_verify_branch/graph_subst.pb", 820}}) {
    ImportResult r = import_taso_pb(kAnchors / set.file);
    NumericReport num = check_numerically(r.corpus);
    print_report(set.file, r, &num);
    EXPECT_EQ(r.total, set.total);
    EXPECT_EQ(r.corpus.rules.size() + r.skipped.size(), r.total);
    std::set<std::string> ids;
    for (const Rule& rule : r.corpus.rules) ids.insert(rule.id);
    for (const ImportIssue& s : r.skipped) {
      EXPECT_FALSE(s.reason.empty()) << s.rule_id;
      EXPECT_TRUE(ids.insert(s.rule_id).second) << s.rule_id << " both imported and skipped";
    }
    EXPECT_EQ(ids.size(), r.total);
  }
}

TEST(TasoImport, DecodesTransposesPoolsAndConstants) {
  ImportResult r = import_taso_pb(kAnchors / "taso/generated_graph_subst_f11782c.pb");
  // PERM=2 with NUMDIM=2 is the permutation [1,0].
  EXPECT_EQ(lhs_text(rule_of(r, "taso-499")), "(transpose 1 0 (smul ?x1 ?s0))");
  EXPECT_EQ(rhs_text(rule_of(r, "taso-499")), "(smul (transpose 1 0 ?x1) ?s0)");
  // TASO's avg pool counts padding; its constant pool kernel takes the channels of the conv's input.
  EXPECT_EQ(lhs_text(rule_of(r, "taso-85"), 1), "(avgpool 3 3 1 1 -1 -1 1 ?i2)");
  EXPECT_EQ(rhs_text(rule_of(r, "taso-85"), 1), "(conv2d 1 1 -1 -1 0 ?i2 (pool_kernel 3 3 ?i2))");
  // Identity as the second matmul operand is sized by the first, as the first by the second's rows.
  EXPECT_EQ(rhs_text(rule_of(r, "taso-152")), "(matmul 0 ?x1 (ewadd ?w1 (eye ?x1)))");
  EXPECT_EQ(rhs_text(rule_of(r, "taso-153")), "(matmul 0 (ewadd ?w1 (eye (transpose 1 0 ?w2))) ?w2)");
  // ones takes the shape of the operand it is combined with, through smul.
  EXPECT_EQ(rhs_text(rule_of(r, "taso-156")), "(ewmul ?i1 (smul (ones ?i1) ?s0))");
  // Split outputs by tsId; the cut moves through the transpose from axis 1 to axis 0.
  const Rule& t = rule_of(r, "taso-420");
  EXPECT_EQ(lhs_text(t, 1), "(split 0 1 1 (transpose 1 0 (concat 1 ?x1 ?x2)) ?x1)");
  EXPECT_EQ(rhs_text(t, 0), "(split 1 0 0 (transpose 1 0 (concat 0 ?x1 ?x2)) ?x1)");
}

// A minimal protobuf writer, so that a test can state a TASO rule file byte by byte.
std::string varint(int64_t v) {
  auto u = static_cast<uint64_t>(v);  // negative int32 values are sign-extended to 10 bytes
  std::string out;
  do {
    out.push_back(static_cast<char>((u & 0x7f) | (u > 0x7f ? 0x80 : 0)));
    u >>= 7;
  } while (u);
  return out;
}
std::string int_field(int field, int64_t v) { return varint(field << 3) + varint(v); }
std::string msg_field(int field, const std::string& body) {
  return varint((field << 3) | 2) + varint(static_cast<int64_t>(body.size())) + body;
}
std::string taso_op(int type, std::vector<std::pair<int, int>> inputs, std::vector<std::pair<int, int>> params) {
  std::string op = int_field(1, type);
  for (auto [op_id, ts] : inputs) op += msg_field(2, int_field(1, op_id) + int_field(2, ts));
  for (auto [key, value] : params) op += msg_field(3, int_field(1, key) + int_field(2, value));
  return op;
}
std::string taso_rule(const std::string& src, const std::string& dst) {
  return msg_field(1, msg_field(1, src) + msg_field(2, dst) +
                          msg_field(3, int_field(1, 0) + int_field(2, 0) + int_field(3, 0) + int_field(4, 0)));
}

TEST(TasoImport, ReportsEveryRuleItCannotConvert) {
  const std::string relu_x1 = taso_op(8, {{-1, 0}}, {});
  std::string pb = taso_rule(relu_x1, taso_op(13, {{-1, 0}}, {{11, 0}, {2, 2}}))  // split of an input
                   + taso_rule(relu_x1, taso_op(11, {{-1, 0}}, {}))                  // BatchNormalization
                   + taso_rule(relu_x1, taso_op(15, {{-1, 0}}, {{10, 2}, {12, 3}}))  // PERM 3 = [1,1]
                   + taso_rule(taso_op(22, {}, {}), relu_x1)                         // eye without context
                   + taso_rule(relu_x1, taso_op(10, {{-2, 0}}, {}))                  // x2 unbound
                   + taso_rule(relu_x1, taso_op(15, {{-1, 0}}, {{10, 2}, {12, 2}}));  // fine
  ImportResult r = import_taso_pb_bytes(pb, "hand.pb");
  print_report("hand-made pb", r);
  EXPECT_EQ(r.total, 6u);
  ASSERT_EQ(r.corpus.rules.size(), 1u);
  EXPECT_EQ(rhs_text(r.corpus.rules[0]), "(transpose 1 0 ?x1)");
  EXPECT_EQ(r.corpus.rules[0].source, "hand.pb#5");
  EXPECT_NE(reason_of(r, "taso-0").find("split on axis 0: no concat boundary in ?x1"), std::string::npos)
      << reason_of(r, "taso-0");
  EXPECT_NE(reason_of(r, "taso-1").find("unsupported TASO op type 11 (BatchNormalization)"), std::string::npos)
      << reason_of(r, "taso-1");
  EXPECT_NE(reason_of(r, "taso-2").find("PERM 3 is not a permutation of 2 axes"), std::string::npos)
      << reason_of(r, "taso-2");
  EXPECT_NE(reason_of(r, "taso-3").find("identity matrix outside a matmul"), std::string::npos)
      << reason_of(r, "taso-3");
  EXPECT_NE(reason_of(r, "taso-4").find("?x2 is not bound"), std::string::npos) << reason_of(r, "taso-4");
}

TEST(TasoImport, ReportsPatternsTooLargeAsTrees) {
  // op k = ewadd(op k-1, op k-1): 60 operators, but 2^60 nodes written as a tree.
  std::string body;
  body += msg_field(1, taso_op(8, {{-1, 0}}, {}));
  for (int k = 1; k < 60; ++k) body += msg_field(1, taso_op(16, {{k - 1, 0}, {k - 1, 0}}, {}));
  body += msg_field(2, taso_op(8, {{-1, 0}}, {}));
  body += msg_field(3, int_field(1, 59) + int_field(2, 0) + int_field(3, 0) + int_field(4, 0));
  ImportResult r = import_taso_pb_bytes(msg_field(1, body), "dag.pb");
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].reason.find("more than 4096 nodes"), std::string::npos) << r.skipped[0].reason;
}

TEST(TasoImport, RejectsWhatIsNotARuleCollection) {
  EXPECT_THROW(import_taso_pb(kAnchors / "tensat/converted.txt"), CorpusError);
  try {
    import_taso_pb(kAnchors / "taso/no_such_file.pb");
    ADD_FAILURE() << "expected CorpusError";
  } catch (const CorpusError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_file.pb: cannot open file"), std::string::npos) << e.what();
  }
}

// --- format detection ----------------------------------------------------------------------------------

TEST(LoadRules, DetectsEveryFormat) {
  ImportResult pb = load_rules_file(kAnchors / "taso/graph_subst.pb");
  EXPECT_EQ(pb.corpus.rules.size(), 133u);
  ImportResult single = load_rules_file(kAnchors / "tensat/converted.txt");
  EXPECT_EQ(single.corpus.rules.size(), 120u);
  EXPECT_EQ(count_multi(single.corpus), 0u);
  ImportResult multi = load_rules_file(kAnchors / "tensat/converted_multi.txt");
  EXPECT_EQ(multi.corpus.rules.size(), 13u);
  EXPECT_EQ(count_multi(multi.corpus), 13u);
  EXPECT_EQ(multi.corpus.rules[0].source, "converted_multi.txt:1");

  // A JSON corpus written from an import loads back with the same rules.
  fs::path dir = fs::temp_directory_path() / ("teq_import_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  save_corpus(multi.corpus, dir / "rules.json");
  ImportResult json = load_rules_file(dir / "rules.json");
  EXPECT_EQ(json.total, 13u);
  ASSERT_EQ(json.corpus.rules.size(), 13u);
  EXPECT_EQ(rhs_text(json.corpus.rules[4], 1), rhs_text(multi.corpus.rules[4], 1));
  EXPECT_EQ(json.corpus.rules[4].source, multi.corpus.rules[4].source);

  // A Tensat file forced to be read as multi-pattern pairs its lines.
  ImportResult forced =
      load_rules_file(kAnchors / "tensat/converted.txt", {.format = RuleFileFormat::TensatMulti});
  EXPECT_EQ(forced.total, 60u);

  std::ofstream(dir / "notes.txt") << "just some text\n";
  try {
    load_rules_file(dir / "notes.txt");
    ADD_FAILURE() << "expected CorpusError";
  } catch (const CorpusError& e) {
    EXPECT_NE(std::string(e.what()).find("notes.txt: unrecognized rule format"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_rules_file(dir / "missing.json"), CorpusError);
  fs::remove_all(dir);
}

// One loader for the three programs: every format, ids unique across files, each rule's origin kept.
TEST(LoadRules, RuleSetKeepsOriginsAndMakesIdsUnique) {
  const fs::path tensat = kAnchors / "tensat/converted.txt", taso = kAnchors / "taso/graph_subst.pb";
  RuleSet set = load_rule_set({tensat, taso, tensat});
  ASSERT_EQ(set.files.size(), 3u);
  EXPECT_EQ(set.files[0].format, RuleFileFormat::TensatSingle);
  EXPECT_EQ(set.files[1].format, RuleFileFormat::TasoPb);
  const size_t n0 = set.files[0].rules.corpus.rules.size(), n1 = set.files[1].rules.corpus.rules.size();
  ASSERT_EQ(set.corpus.rules.size(), 2 * n0 + n1);
  ASSERT_EQ(set.origin.size(), set.corpus.rules.size());
  std::set<std::string> ids;
  for (size_t k = 0; k < set.corpus.rules.size(); ++k) {
    EXPECT_TRUE(ids.insert(set.corpus.rules[k].id).second) << set.corpus.rules[k].id;
    const RuleOrigin& o = set.origin[k];
    const Rule& own = set.files[o.file].rules.corpus.rules[o.index];
    EXPECT_EQ(rhs_text(own, 0), rhs_text(set.corpus.rules[k], 0));
  }
  // The third file repeats the first's ids: they get its stem in front; the first file keeps its own.
  EXPECT_EQ(set.corpus.rules[0].id, set.files[0].rules.corpus.rules[0].id);
  EXPECT_EQ(set.corpus.rules[n0 + n1].id, "converted/" + set.files[2].rules.corpus.rules[0].id);
  EXPECT_EQ(set.skipped(), 0u);

  // A file that cannot be read is named, whichever position it has.
  try {
    load_rule_set({tensat, kAnchors / "no_such_rules.json"});
    ADD_FAILURE() << "expected CorpusError";
  } catch (const CorpusError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with((kAnchors / "no_such_rules.json").string())) << e.what();
  }
}

}  // namespace
}  // namespace teq
