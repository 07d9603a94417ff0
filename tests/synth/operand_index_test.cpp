// The enumerator's second-operand index (synth/operand_index.h) against the brute-force pairs it replaced,
// shape ids past 16 bits, and the count cap on distinct shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "rules/semantics.h"
#include "rules/sexpr.h"
#include "synth/enumerate.h"
#include "synth/operand_index.h"

namespace teq::synth {
namespace {

/// v's shape rule accepts (s1, s2) in both fingerprint sets: what the enumerator's fit asks of the rules.
bool fits(const OpVariant& v, const ShapePair& s1, const ShapePair& s2) {
  return try_infer_shape(v.op, v.attrs, std::vector<Shape>{s1.a, s2.a}).has_value() &&
         try_infer_shape(v.op, v.attrs, std::vector<Shape>{s1.b, s2.b}).has_value();
}

/// For every binary variant of `vocab` and every first shape: the shapes that fit equal those among the
/// index's candidates that fit, and the candidates are ascending and unique. Returns, per operator, the
/// candidates looked at and all pairs, for the caller to check that the index narrows.
std::map<OpKind, std::pair<size_t, size_t>> compare_with_brute_force(const Vocabulary& vocab,
                                                                     const std::vector<ShapePair>& shapes) {
  std::vector<uint32_t> all(shapes.size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  std::map<OpKind, std::pair<size_t, size_t>> out;
  size_t fitting = 0;
  std::vector<uint32_t> candidates;
  for (const OpVariant& v : vocab.variants) {
    if (v.arity != 2) continue;
    SecondOperandIndex index(v, shapes, all);
    for (uint32_t s1 : all) {
      std::vector<uint32_t> brute;
      for (uint32_t s2 : all)
        if (fits(v, shapes[s1], shapes[s2])) brute.push_back(s2);
      index.candidates(shapes[s1], candidates);
      EXPECT_TRUE(std::is_sorted(candidates.begin(), candidates.end()));
      EXPECT_TRUE(std::adjacent_find(candidates.begin(), candidates.end()) == candidates.end());
      std::vector<uint32_t> from_index;
      for (uint32_t s2 : candidates)
        if (fits(v, shapes[s1], shapes[s2])) from_index.push_back(s2);
      EXPECT_EQ(from_index, brute) << op_name(v.op) << " after shape " << s1;
      fitting += brute.size();
      out[v.op].first += candidates.size();
      out[v.op].second += all.size();
    }
  }
  EXPECT_GT(fitting, 0u);
  return out;
}

TEST(OperandIndex, GivesTheBruteForcePairsOnTheDefaultVocabulary) {
  const Vocabulary vocab = make_vocabulary(default_op_names(), default_leaf_types(1));
  // The shapes of every term of up to two operators: leaves, matrices, images, concatenations, splits.
  const Enumeration e = enumerate_terms(vocab, {.max_ops = 2, .max_inputs = 2});
  ASSERT_GT(e.shapes.size(), 200u);
  const auto looked_at = compare_with_brute_force(vocab, e.shapes);
  // Where the shape rule requires extents to be equal, the index narrows: far fewer candidates than pairs.
  // (A split's reference and a convolution's kernel agree with the first operand in no extent.)
  // Matmul's inner extent takes few values here (a fifth of the pairs share it), equal shapes fewer.
  for (auto [op, factor] : {std::pair{OpKind::EwAdd, 10}, {OpKind::EwMul, 10}, {OpKind::Concat, 10}, {OpKind::Matmul, 4}}) {
    ASSERT_TRUE(looked_at.contains(op)) << op_name(op);
    EXPECT_LT(looked_at.at(op).first * factor, looked_at.at(op).second) << op_name(op);
  }
}

TEST(OperandIndex, EqualitiesComeFromTheShapeRules) {
  const Vocabulary vocab = make_vocabulary({"matmul", "ewadd", "concat"}, default_leaf_types(1));
  for (const OpVariant& v : vocab.variants) {
    const auto eq = operand_equalities(v, 2, 2);
    ASSERT_TRUE(eq.has_value()) << op_name(v.op);
    using Eqs = std::vector<std::pair<uint32_t, uint32_t>>;
    if (v.op == OpKind::Matmul) {
      EXPECT_EQ(*eq, (Eqs{{1, 0}}));  // the inner dimension
    }
    if (v.op == OpKind::EwAdd) {
      EXPECT_EQ(*eq, (Eqs{{0, 0}, {1, 1}}));
    }
    if (v.op == OpKind::Concat) {  // the axis other than the concatenated one
      const uint32_t off = v.attrs[0] == 0 ? 1 : 0;
      EXPECT_EQ(*eq, (Eqs{{off, off}}));
    }
  }
  const OpVariant ewadd{OpKind::EwAdd, {}, 2};
  EXPECT_FALSE(operand_equalities(ewadd, 2, 3).has_value());  // ranks the rule refuses outright
}

std::string text(const Shape& s) {
  std::string out = "[";
  for (int64_t d : s) out += std::to_string(d) + ",";
  return out + "]";
}

/// Everything an enumeration produces, as text, for comparing two runs (with `ids`, the shape ids too).
std::vector<std::string> describe(const Enumeration& e, bool ids = true) {
  std::vector<std::string> out;
  if (ids)
    for (const ShapePair& s : e.shapes) out.push_back(text(s.a) + text(s.b));
  for (uint32_t c = 0; c < e.classes.size(); ++c) {
    const ShapePair& s = e.shapes[e.classes[c].shape];
    out.push_back(to_sexpr(e.class_pattern(c), e.class_pattern(c).root()) + " : " + text(s.a) + text(s.b) +
                  (ids ? " #" + std::to_string(e.classes[c].shape) : ""));
  }
  for (const Equation& q : e.equations) {
    Expr t = e.term_pattern(q.member);
    out.push_back(to_sexpr(t, t.root()) + " = " + std::to_string(q.cls));
  }
  return out;
}

TEST(OperandIndex, EnumerationIsTheSameAsWithEveryPair) {
  // Convolutions (a weight operand), pooling (activations only), splits and constants (leaf operands).
  const Vocabulary vocab = make_vocabulary({"matmul", "ewadd", "concat", "split", "relu", "conv2d", "maxpool", "ones"},
                                           default_leaf_types(1));
  EnumerateConfig c{.max_ops = 3, .max_inputs = 3, .threads = 2};
  const Enumeration indexed = enumerate_terms(vocab, c);
  c.brute_force_operands = true;
  const Enumeration brute = enumerate_terms(vocab, c);
  ASSERT_GT(indexed.equations.size(), 100u);
  // Brute force interns more shapes, so shape ids and with them the order in which a level's terms are met
  // differ (and so which term represents a class): the same terms and classes, counted per level, and the
  // same shapes of classes.
  auto class_shapes = [](const Enumeration& e) {
    std::vector<std::string> out;
    for (const std::string& t : describe(e, false))
      if (t.find(" : ") != std::string::npos) out.push_back(t.substr(t.find(" : ")));  // a class's line
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(class_shapes(indexed), class_shapes(brute));
  EXPECT_EQ(indexed.equations.size(), brute.equations.size());
  ASSERT_EQ(indexed.levels.size(), brute.levels.size());
  for (size_t l = 0; l < indexed.levels.size(); ++l) {
    EXPECT_EQ(indexed.levels[l].terms, brute.levels[l].terms);
    EXPECT_EQ(indexed.levels[l].new_classes, brute.levels[l].new_classes);
    EXPECT_EQ(indexed.levels[l].candidates, brute.levels[l].candidates);
    // Only applications expand() can use are in the table; every pair of live shapes in brute force's.
    EXPECT_LE(indexed.levels[l].operand_pairs, brute.levels[l].operand_pairs);
  }
  EXPECT_LT(indexed.shapes.size(), brute.shapes.size());
}

TEST(Enumerate, MaxShapesRefusesApplicationsDeterministically) {
  const Vocabulary vocab = make_vocabulary({"matmul", "ewadd", "concat", "transpose"}, default_leaf_types(2));
  EnumerateConfig c{.max_ops = 3, .max_inputs = 3};
  const Enumeration free = enumerate_terms(vocab, c);
  EXPECT_EQ(free.shapes_refused, 0u);
  c.max_shapes = free.shapes.size() / 2;
  const Enumeration capped = enumerate_terms(vocab, c);
  EXPECT_EQ(capped.shapes.size(), c.max_shapes);
  EXPECT_GT(capped.shapes_refused, 0u);
  EXPECT_LT(capped.total_terms(), free.total_terms());
  c.threads = 3;
  const Enumeration again = enumerate_terms(vocab, c);
  EXPECT_EQ(describe(again), describe(capped));
  EXPECT_EQ(again.shapes_refused, capped.shapes_refused);
  c.max_shapes = 1;  // below the leaves' own shapes
  EXPECT_THROW(enumerate_terms(vocab, c), std::invalid_argument);
}

/// The set-A and set-B lengths of a term over 1-d leaves joined by concat: the sums of its leaves'.
std::pair<int64_t, int64_t> concat_lengths(const Enumeration& e, const TermNode& t) {
  if (t.variant == kLeafVariant) {
    const ShapePair& s = e.shapes[e.leaf_shape[t.child[0]]];
    return {s.a[0], s.b[0]};
  }
  std::pair<int64_t, int64_t> sum{0, 0};
  for (uint8_t i = 0; i < t.arity; ++i) {
    auto [a, b] = concat_lengths(e, e.classes[t.child[i]].rep);
    sum.first += a, sum.second += b;
  }
  return sum;
}

TEST(Enumerate, MoreShapesThanSixteenBitsHold) {
  // Twenty 1-d leaf types of unrelated lengths: concatenations of up to six of them have well over 65,535
  // distinct (set A, set B) lengths, which 16-bit shape ids could not number.
  std::vector<LeafType> types;
  uint64_t x = 12345;
  for (int t = 0; t < 20; ++t) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const int64_t a = 1 + static_cast<int64_t>((x >> 33) % 150), b = 1 + static_cast<int64_t>((x >> 13) % 150);
    types.push_back(LeafType{"v" + std::string(1, static_cast<char>('a' + t)) + "_", {a}, {b}, 1});
  }
  const Vocabulary vocab = make_vocabulary({"concat"}, types);
  const Enumeration e = enumerate_terms(vocab, {.max_ops = 3, .max_inputs = 3, .threads = 2});
  ASSERT_GT(e.shapes.size(), 65'535u);
  size_t past_16_bits = 0;
  for (const EquivClass& c : e.classes) {
    ASSERT_LT(c.shape, e.shapes.size());
    past_16_bits += c.shape > 65'535;
    const auto [a, b] = concat_lengths(e, c.rep);
    ASSERT_EQ(e.shapes[c.shape].a, Shape{a});
    ASSERT_EQ(e.shapes[c.shape].b, Shape{b});
  }
  EXPECT_GT(past_16_bits, 0u);
}

}  // namespace
}  // namespace teq::synth
