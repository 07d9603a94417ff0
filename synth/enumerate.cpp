#include "synth/enumerate.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "rules/ops/layout.h"
#include "rules/semantics.h"
#include "synth/fingerprint.h"
#include "synth/generator_fit.h"

namespace teq::synth {

bool OpSet::contains(uint32_t id) const {
  for (uint8_t i = 0; i < size && i < kMaxOps; ++i)
    if (ids[i] == id) return true;
  return false;
}

uint64_t Enumeration::total_terms() const {
  uint64_t n = 0;
  for (const LevelStats& l : levels) n += l.terms;
  return n;
}

ExprId Enumeration::add_term(Expr& expr, const TermNode& node) const {
  if (node.variant == kLeafVariant) return expr.add_var(leaf_names[node.child[0]]);
  const OpVariant& v = vocab.variants[node.variant];
  std::vector<ExprId> kids;
  for (uint8_t i = 0; i < node.arity; ++i) kids.push_back(add_class(expr, node.child[i]));
  return expr.add(v.op, v.attrs, std::move(kids));
}

ExprId Enumeration::add_class(Expr& expr, uint32_t cls) const { return add_term(expr, classes[cls].rep); }

Expr Enumeration::class_pattern(uint32_t cls) const {
  Expr e;
  e.add_root(add_class(e, cls));
  return e;
}

Expr Enumeration::term_pattern(const TermNode& node) const {
  Expr e;
  e.add_root(add_term(e, node));
  return e;
}

namespace {

using Clock = std::chrono::steady_clock;

/// Union of two sorted operator sets; size may exceed kMaxOps (then only the count is meaningful).
OpSet union_of(const OpSet& a, const OpSet& b) {
  OpSet out;
  size_t i = 0, j = 0, n = 0;
  auto put = [&](uint32_t v) {
    if (n < kMaxOps) out.ids[n] = v;
    ++n;
  };
  while (i < a.size || j < b.size) {
    if (j >= b.size || (i < a.size && a.ids[i] < b.ids[j])) put(a.ids[i++]);
    else if (i >= a.size || b.ids[j] < a.ids[i]) put(b.ids[j++]);
    else { put(a.ids[i++]); ++j; }
  }
  out.size = static_cast<uint8_t>(std::min<size_t>(n, 255));
  return out;
}

/// Smallest id present in both sets, or UINT32_MAX.
uint32_t first_shared(const OpSet& a, const OpSet& b) {
  size_t i = 0, j = 0;
  while (i < a.size && j < b.size) {
    if (a.ids[i] == b.ids[j]) return a.ids[i];
    if (a.ids[i] < b.ids[j]) ++i; else ++j;
  }
  return UINT32_MAX;
}

/// One term produced by a worker, waiting for the sequential merge.
struct Produced {
  TermNode node;
  OpSet ops;  // children's operator nodes
  uint32_t vars;
  uint32_t shape;
  bool canonical;
  bool weight_only;
  uint64_t op_names;
  uint64_t hash_a, hash_b;
  std::optional<Tensor<ModInt>> value_a, value_b;  // kept only for terms that may become representatives
};

class Enumerator {
 public:
  Enumerator(const Vocabulary& vocab, const EnumerateConfig& config) : cfg_(config) {
    if (config.max_ops < 1 || config.max_ops > kMaxOps - 1)
      throw std::invalid_argument("max_ops must be between 1 and " + std::to_string(kMaxOps - 1));
    if (config.shard_count < 1 || config.shard_index < 0 || config.shard_index >= config.shard_count)
      throw std::invalid_argument("shard must be i/n with 0 <= i < n");
    out_.vocab = vocab;
  }

  Enumeration run() {
    start_ = Clock::now();
    add_leaves();
    for (int n = 1; n <= cfg_.max_ops && !out_.truncated; ++n) run_level(n);
    out_.seconds = seconds();
    return std::move(out_);
  }

 private:
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  /// The id of shape pair (a, b), interned if new; -1 when it is new and EnumerateConfig::max_shapes is
  /// reached (called in a fixed order, from one thread).
  int64_t intern_shape(const Shape& a, const Shape& b) {
    auto key = std::make_pair(a, b);
    auto it = shape_ids_.find(key);
    if (it != shape_ids_.end()) return it->second;
    if (cfg_.max_shapes > 0 && out_.shapes.size() >= cfg_.max_shapes) {
      ++out_.shapes_refused;
      return -1;
    }
    if (out_.shapes.size() >= UINT32_MAX) throw std::runtime_error("rulegen: too many distinct shapes");
    const auto id = static_cast<uint32_t>(out_.shapes.size());
    out_.shapes.push_back({a, b});
    shape_ids_.emplace(std::move(key), id);
    buckets_.emplace_back();
    return id;
  }

  void add_leaves() {
    std::mt19937_64 rng_a(mix64(cfg_.seed)), rng_b(mix64(cfg_.seed ^ 0xB5ULL));
    uint32_t index = 0;
    for (const LeafType& t : out_.vocab.leaf_types) {
      type_ranges_.push_back({index, static_cast<uint32_t>(t.count)});
      for (int k = 1; k <= t.count; ++k, ++index) {
        out_.leaf_names.push_back(t.prefix + std::to_string(k));
        const int64_t interned = intern_shape(t.shape_a, t.shape_b);
        if (interned < 0) throw std::invalid_argument("max_shapes is below the leaf types' shapes");
        const auto shape = static_cast<uint32_t>(interned);
        out_.leaf_shape.push_back(shape);
        EquivClass c;
        c.rep.child[0] = index;
        c.vars = 1u << index;
        c.shape = shape;
        c.weight_only = t.weight;
        out_.classes.push_back(c);
        slot_.push_back(static_cast<int32_t>(values_a_.size()));
        values_a_.push_back(random_tensor(t.shape_a, rng_a));
        values_b_.push_back(random_tensor(t.shape_b, rng_b));
        // A term equal to a leaf ((ewmul ?a1 (ones ?a1)), a split of a concat) joins the leaf's class, so
        // that equations name the leaf itself: as a class of its own such a term became the left side of
        // useless two-pattern rules (an identity in disguise paired with an unrelated pattern).
        const uint64_t hash_a = fingerprint(values_a_.back());
        const uint64_t key = combine_fingerprints(hash_a, fingerprint(values_b_.back()));
        class_of_key_.emplace(key, index);
        key_of_hash_a_.emplace(hash_a, key);
        buckets_[shape][0].push_back(index);
        containing_.emplace_back();
      }
    }
    leaf_count_ = index;
    // A kernel is a cut reference (conv_cut) only when its output-channel count differs from every
    // activation's channel count in both sets: cut at k's 4 outputs, which are also i's 4 channels, a split
    // takes i apart too, and every such rule holds only where the two extents agree (junk that the
    // verifier's shape search accepts). The default a and b kernels (6 outputs on 4 channels) qualify.
    auto channels_clash = [&](auto shape_of, int64_t outputs) {
      for (const LeafType& t : out_.vocab.leaf_types)
        if (!t.weight && shape_of(t).size() == 4 && shape_of(t)[1] == outputs) return true;
      return false;
    };
    for (const LeafType& t : out_.vocab.leaf_types) {
      const bool reference = t.weight && t.shape_a.size() == 4 && t.shape_b.size() == 4 &&
                             !channels_clash([](const LeafType& u) { return u.shape_a; }, t.shape_a[0]) &&
                             !channels_clash([](const LeafType& u) { return u.shape_b; }, t.shape_b[0]);
      for (int k = 0; k < t.count; ++k) cut_reference_.push_back(reference);
    }
  }

  /// Within each leaf type the leaves used must be the first ones (x1, x2 but not x2 alone): every
  /// other choice is a renaming of one of these.
  bool is_canonical(uint32_t vars) const {
    for (auto [first, count] : type_ranges_) {
      uint32_t m = (vars >> first) & ((1u << count) - 1);
      if (m & (m + 1)) return false;
    }
    return true;
  }

  int64_t fit(const OpVariant& v, uint32_t s1, int64_t s2) {
    const ShapePair& p1 = out_.shapes[s1];
    const ShapePair* p2 = s2 >= 0 ? &out_.shapes[s2] : nullptr;
    // The generator's own restrictions (generator_fit.h), beyond the shape rules.
    if (!generator_fits(v.op, p1.a, p2 ? &p2->a : nullptr)) return -1;
    if (p2 && !generator_fits(v.op, p1.b, &p2->b)) return -1;
    std::vector<Shape> in_a{p1.a}, in_b{p1.b};
    if (p2) in_a.push_back(p2->a), in_b.push_back(p2->b);
    const std::optional<Shape> oa = try_infer_shape(v.op, v.attrs, in_a);
    if (!oa) return -1;
    const std::optional<Shape> ob = try_infer_shape(v.op, v.attrs, in_b);
    if (!ob) return -1;
    // Scalars only feed smul; huge tensors only slow fingerprints down.
    if (oa->empty() || ob->empty() || num_elements(*oa) > 4096 || num_elements(*ob) > 4096) return -1;
    if (oa->size() != ob->size()) return -1;
    return intern_shape(*oa, *ob);
  }

  /// For each variant and live operand shape, the second-operand shapes that fit and the output shape
  /// (compat_), as rows of a table per variant over the live shapes (those some representative has). The
  /// second operands are looked up in an index of what the shape rule requires to match
  /// (operand_index.h) instead of being tried against every live shape, and only shapes that expand() can
  /// use are offered: a leaf's where the operand must be a leaf (split's reference, a constant's `like`), a
  /// weight-only representative's where it must be a weight (a convolution's kernel), an activation's as
  /// the image of a convolution or pooling. Rows are tried in ascending shape order, so shapes are interned
  /// in a fixed order. At a shard's last level only the pairs whose output shape is the shard's are listed:
  /// produce() would refuse the others' terms, and visiting them was most of a shard's time.
  void build_compat(int n) {
    const bool this_shard_only = n == cfg_.max_ops && cfg_.shard_count > 1;
    auto keep = [&](int64_t o) { return o >= 0 && (!this_shard_only || in_this_shard(static_cast<uint32_t>(o))); };
    std::vector<uint32_t> live, leaf_shapes, weight_shapes;
    std::vector<char> has_activation(buckets_.size(), 0);
    for (size_t s = 0; s < buckets_.size(); ++s) {
      bool any = false, weight = false;
      for (const auto& b : buckets_[s])
        for (uint32_t c : b) {
          any = true;
          if (out_.classes[c].weight_only) weight = true;
          else has_activation[s] = 1;
        }
      if (!any) continue;
      live.push_back(static_cast<uint32_t>(s));
      if (!buckets_[s][0].empty()) leaf_shapes.push_back(static_cast<uint32_t>(s));
      if (weight) weight_shapes.push_back(static_cast<uint32_t>(s));
    }
    live_row_.assign(out_.shapes.size(), -1);
    for (size_t r = 0; r < live.size(); ++r) live_row_[live[r]] = static_cast<int32_t>(r);
    live_shapes_ = live.size();
    operand_pairs_ = 0;
    const size_t V = out_.vocab.variants.size();
    compat_.assign(V, {});
    std::vector<uint32_t> seconds;
    for (size_t v = 0; v < V; ++v) {
      const OpVariant& var = out_.vocab.variants[v];
      CompatTable& table = compat_[v];
      table.offset.assign(live.size() + 1, 0);
      // What expand() may apply the variant to (it checks the same per class); brute force offers all.
      const bool brute = cfg_.brute_force_operands;
      const bool leaf_first = !brute && var.arity == 1 && var.last == LastChild::Leaf;
      const bool activation_first = !brute && reads_activation(var.op);
      const std::vector<uint32_t>& offered = brute                         ? live
                                             : var.last == LastChild::Leaf ? leaf_shapes
                                             : var.weight_operand          ? weight_shapes
                                                                           : live;
      std::optional<SecondOperandIndex> index;
      if (var.arity == 2 && !brute) index.emplace(var, out_.shapes, offered);
      for (size_t r = 0; r < live.size(); ++r) {
        const uint32_t s1 = live[r];
        const bool usable = (!leaf_first || !buckets_[s1][0].empty()) && (!activation_first || has_activation[s1]);
        if (usable && var.arity == 1) {
          if (int64_t o = fit(var, s1, -1); keep(o)) table.entries.push_back({kNoShape, static_cast<uint32_t>(o)});
        } else if (usable) {
          if (index) index->candidates(out_.shapes[s1], seconds);
          for (uint32_t s2 : index ? seconds : offered)
            if (int64_t o = fit(var, s1, s2); keep(o)) table.entries.push_back({s2, static_cast<uint32_t>(o)});
        }
        table.offset[r + 1] = table.entries.size();
      }
      operand_pairs_ += table.entries.size();
    }
  }

  /// compat_'s row of (second shape, output shape) for variant v and first shape s1, ascending by second.
  std::span<const std::pair<uint32_t, uint32_t>> fits(uint32_t v, uint32_t s1) const {
    if (s1 >= live_row_.size() || live_row_[s1] < 0) return {};
    const CompatTable& t = compat_[v];
    const auto r = static_cast<size_t>(live_row_[s1]);
    return std::span(t.entries.data() + t.offset[r], t.offset[r + 1] - t.offset[r]);
  }
  int64_t compat(uint32_t v, uint32_t s1, uint32_t s2) const {
    auto row = fits(v, s1);
    auto it = std::lower_bound(row.begin(), row.end(), std::pair<uint32_t, uint32_t>{s2, 0},
                               [](const auto& x, const auto& y) { return x.first < y.first; });
    return it != row.end() && it->first == s2 ? static_cast<int64_t>(it->second) : -1;
  }

  bool in_this_shard(uint32_t shape) const { return cfg_.shard_count <= 1 || shard_of(shape) == cfg_.shard_index; }

  int shard_of(uint32_t shape) const {
    const ShapePair& p = out_.shapes[shape];
    uint64_t h = 7;
    for (int64_t d : p.a) h = mix64(h ^ static_cast<uint64_t>(d));
    for (int64_t d : p.b) h = mix64(h ^ static_cast<uint64_t>(d + 1000));
    return static_cast<int>(h % static_cast<uint64_t>(cfg_.shard_count));
  }

  /// Evaluates one term on both input sets and appends it to `out`.
  void produce(int n, uint32_t v, uint32_t c1, uint32_t c2, uint32_t shape, std::vector<Produced>& out) {
    const OpVariant& var = out_.vocab.variants[v];
    const EquivClass& a = out_.classes[c1];
    uint32_t vars = a.vars;
    OpSet ops = a.ops;
    if (var.arity == 2) {
      const EquivClass& b = out_.classes[c2];
      vars |= b.vars;
      ops = union_of(a.ops, b.ops);
    }
    if (std::popcount(vars) > cfg_.max_inputs) return;
    if (ops.size != n - 1) return;
    uint64_t names = a.op_names | (uint64_t{1} << var.name_index);
    if (var.arity == 2) names |= out_.classes[c2].op_names;
    if (!out_.vocab.may_combine(names)) return;  // a scoped family with an operator outside its scope
    const bool last = n == cfg_.max_ops;
    const bool canonical = is_canonical(vars);
    if (last && !canonical) return;  // can neither grow nor give a new rule
    if (last && !in_this_shard(shape)) return;
    const bool constant = var.op == OpKind::Ones || var.op == OpKind::Eye || var.op == OpKind::IConv ||
                          var.op == OpKind::PoolKernel;
    // split reads only its reference's shape: a weight cut at an activation's extent is still a weight.
    const bool weight_only = constant || (a.weight_only && (var.arity == 1 || var.op == OpKind::Split ||
                                                            out_.classes[c2].weight_only));
    Produced p{TermNode{v, {c1, var.arity == 2 ? c2 : 0}, static_cast<uint8_t>(var.arity)}, ops, vars, shape,
               canonical, weight_only, names, 0, 0, std::nullopt, std::nullopt};
    Arith<ModInt> ar;
    std::array<const Tensor<ModInt>*, 2> args_a{&values_a_[slot_[c1]], nullptr}, args_b{&values_b_[slot_[c1]], nullptr};
    if (var.arity == 2) args_a[1] = &values_a_[slot_[c2]], args_b[1] = &values_b_[slot_[c2]];
    const ShapePair& sp = out_.shapes[shape];
    Tensor<ModInt> va = evaluate_op<ModInt>(ar, var.op, var.attrs, std::span(args_a.data(), var.arity), sp.a);
    Tensor<ModInt> vb = evaluate_op<ModInt>(ar, var.op, var.attrs, std::span(args_b.data(), var.arity), sp.b);
    p.hash_a = fingerprint(va);
    p.hash_b = fingerprint(vb);
    if (!last) p.value_a = std::move(va), p.value_b = std::move(vb);
    out.push_back(std::move(p));
  }

  /// Every term of `n` operators whose top is variant v and whose first operand is class c1.
  void expand(int n, uint32_t v, uint32_t c1, std::vector<Produced>& out) {
    const OpVariant& var = out_.vocab.variants[v];
    const EquivClass& a = out_.classes[c1];
    const auto fits = this->fits(v, a.shape);
    if (reads_activation(var.op) && a.weight_only) return;
    if (var.arity == 1) {
      if (a.size != n - 1) return;
      if (var.last == LastChild::Leaf && c1 >= leaf_count_) return;
      for (auto [unused, s] : fits) produce(n, v, c1, 0, s, out);
      return;
    }
    auto operand_ok = [&](uint32_t c2) {
      if (var.last == LastChild::Leaf && c2 >= leaf_count_) return false;
      if (var.kernel_reference && !cut_reference_[c2]) return false;
      return !var.weight_operand || out_.classes[c2].weight_only;
    };
    const int need = n - 1 - a.size;
    // Disjoint operands: sizes add up to n - 1.
    if (need >= 0 && (var.last != LastChild::Leaf || need == 0)) {
      for (auto [s2, s] : fits) {
        for (uint32_t c2 : buckets_[s2][need]) {
          if (!operand_ok(c2)) continue;
          if (need > 0 && a.size > 0 && first_shared(a.ops, out_.classes[c2].ops) != UINT32_MAX) continue;
          produce(n, v, c1, c2, s, out);
        }
      }
    }
    // Operands that share operator nodes: found through the nodes of c1, each pair once (at the
    // smallest shared node).
    if (a.size > 0 && var.last == LastChild::Any) {
      for (uint8_t k = 0; k < a.ops.size; ++k) {
        uint32_t o = a.ops.ids[k];
        for (uint32_t c2 : containing_[o]) {
          const EquivClass& b = out_.classes[c2];
          if (b.size > n - 1 || first_shared(a.ops, b.ops) != o || !operand_ok(c2)) continue;
          const int64_t s = compat(v, a.shape, b.shape);
          if (s < 0) continue;
          produce(n, v, c1, c2, static_cast<uint32_t>(s), out);
        }
      }
    }
  }

  void merge(int n, std::vector<Produced>& produced, LevelStats& stats) {
    const bool last = n == cfg_.max_ops;
    for (Produced& p : produced) {
      ++stats.terms;
      uint64_t key = combine_fingerprints(p.hash_a, p.hash_b);
      if (auto it = class_of_key_.find(key); it != class_of_key_.end()) {
        if (p.canonical) {
          out_.equations.push_back(Equation{p.node, p.ops, p.vars, it->second, static_cast<uint8_t>(n)});
          ++stats.candidates;
        }
        continue;
      }
      auto [seen, fresh] = key_of_hash_a_.emplace(p.hash_a, key);
      if (!fresh && seen->second != key) {
        ++stats.separated;
        if (out_.separated_examples.size() < 64) out_.separated_examples.emplace_back(p.node, class_of_key_.at(seen->second));
      }
      uint32_t id = static_cast<uint32_t>(out_.classes.size());
      EquivClass c;
      c.rep = p.node;
      c.ops = p.ops;
      c.ops.ids[c.ops.size++] = id;  // ids grow, so the set stays sorted
      c.vars = p.vars;
      c.shape = p.shape;
      c.size = static_cast<uint8_t>(n);
      c.weight_only = p.weight_only;
      c.op_names = p.op_names;
      out_.classes.push_back(c);
      class_of_key_.emplace(key, id);
      ++stats.new_classes;
      slot_.push_back(-1);
      containing_.emplace_back();
      if (!last) {
        slot_[id] = static_cast<int32_t>(values_a_.size());
        values_a_.push_back(std::move(*p.value_a));
        values_b_.push_back(std::move(*p.value_b));
        buckets_[p.shape][n].push_back(id);
        for (uint8_t k = 0; k < c.ops.size; ++k) containing_[c.ops.ids[k]].push_back(id);
      }
    }
    produced.clear();
  }

  void run_level(int n) {
    auto level_start = Clock::now();
    LevelStats stats;
    stats.level = n;
    build_compat(n);
    stats.live_shapes = live_shapes_;
    stats.operand_pairs = operand_pairs_;
    std::vector<std::pair<uint32_t, uint32_t>> items;  // (variant, first operand), in a fixed order
    const uint32_t num_classes = static_cast<uint32_t>(out_.classes.size());
    for (uint32_t v = 0; v < out_.vocab.variants.size(); ++v)
      for (uint32_t c = 0; c < num_classes; ++c)
        if (slot_[c] >= 0 && out_.classes[c].size <= n - 1) items.emplace_back(v, c);
    const bool last = n == cfg_.max_ops;
    const size_t chunk = last ? 2048 : 64;  // below the last level, results carry tensors
    const int threads = std::max(1, cfg_.threads);
    std::vector<std::vector<Produced>> results;
    auto last_report = Clock::now();
    for (size_t begin = 0; begin < items.size(); begin += chunk) {
      if (cfg_.time_limit_s > 0 && seconds() > cfg_.time_limit_s) {
        out_.truncated = true;
        break;
      }
      size_t end = std::min(items.size(), begin + chunk);
      results.assign(end - begin, {});
      std::atomic<size_t> next{begin};
      auto work = [&] {
        for (size_t i; (i = next.fetch_add(1)) < end;) expand(n, items[i].first, items[i].second, results[i - begin]);
      };
      if (threads == 1) {
        work();
      } else {
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) pool.emplace_back(work);
        for (std::thread& t : pool) t.join();
      }
      for (auto& r : results) merge(n, r, stats);
      if (cfg_.on_progress && Clock::now() - last_report > std::chrono::seconds(1)) {
        last_report = Clock::now();
        report(n, stats, static_cast<double>(end) / static_cast<double>(items.size()), level_start);
      }
    }
    stats.seconds = std::chrono::duration<double>(Clock::now() - level_start).count();
    out_.levels.push_back(stats);
    if (cfg_.on_progress) report(n, stats, 1, level_start);
  }

  /// Progress of level n (`stats` not yet in out_.levels unless done == 1).
  void report(int n, const LevelStats& stats, double done, Clock::time_point level_start) const {
    const uint64_t pending = done < 1 ? stats.terms : 0;
    cfg_.on_progress(EnumerateProgress{n, out_.total_terms() + pending, out_.classes.size(), out_.equations.size(),
                                       out_.shapes.size(), stats.live_shapes, stats.operand_pairs,
                                       out_.shapes_refused, done, seconds(),
                                       std::chrono::duration<double>(Clock::now() - level_start).count()});
  }

  EnumerateConfig cfg_;
  Enumeration out_;
  Clock::time_point start_;
  uint32_t leaf_count_ = 0;
  std::vector<char> cut_reference_;  // per leaf: a kernel that conv_cut may cut at (add_leaves)
  std::vector<std::pair<uint32_t, uint32_t>> type_ranges_;  // (first leaf, count) per leaf type
  std::map<std::pair<Shape, Shape>, uint32_t> shape_ids_;
  std::vector<std::array<std::vector<uint32_t>, kMaxOps + 1>> buckets_;  // [shape][size] -> classes
  std::vector<std::vector<uint32_t>> containing_;  // [op node] -> representatives whose DAG has it
  std::vector<int32_t> slot_;                      // [class] -> values index, -1 if not kept
  std::vector<Tensor<ModInt>> values_a_, values_b_;
  std::unordered_map<uint64_t, uint32_t> class_of_key_;
  std::unordered_map<uint64_t, uint64_t> key_of_hash_a_;
  static constexpr uint32_t kNoShape = UINT32_MAX;  // a unary variant's second operand
  struct CompatTable {
    std::vector<size_t> offset;  // [live row] -> first entry; one more at the end
    std::vector<std::pair<uint32_t, uint32_t>> entries;  // (second shape, output shape), rows ascending
  };
  std::vector<CompatTable> compat_;  // [variant]
  std::vector<int32_t> live_row_;    // [shape] -> row of compat_'s tables, -1 if not live
  uint64_t live_shapes_ = 0, operand_pairs_ = 0;
};

}  // namespace

Enumeration enumerate_terms(const Vocabulary& vocab, const EnumerateConfig& config) {
  return Enumerator(vocab, config).run();
}

}  // namespace teq::synth
