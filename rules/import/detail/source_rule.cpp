#include "rules/import/detail/source_rule.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <tuple>

#include "rules/rank_signature.h"
#include "rules/sexpr.h"

namespace teq::import_detail {

int SourceRule::add(SourceNode node) {
  nodes.push_back(std::move(node));
  return static_cast<int>(nodes.size()) - 1;
}

int SourceRule::var(const std::string& name) {
  auto it = var_nodes_.find(name);
  if (it != var_nodes_.end()) return it->second;
  SourceNode n;
  n.op = OpKind::Var;
  n.var = name;
  int id = add(std::move(n));
  var_nodes_.emplace(name, id);
  return id;
}

namespace {

// Larger patterns are reported rather than written out (a DAG in a rule file can be huge as a tree).
constexpr size_t kMaxTreeNodes = 4096;

bool is_constant(OpKind op) {
  return op == OpKind::Ones || op == OpKind::Eye || op == OpKind::IConv || op == OpKind::PoolKernel;
}

// --- ranks -------------------------------------------------------------------------------------------
// Which axis a concat boundary moves to through matmul or transpose depends on ranks, which patterns do
// not state. They follow from the operators (conv is 4-d, concat states its rank, element-wise operands
// share one), so solve those equalities with a union-find whose classes may carry a fixed rank.
constexpr int kMaxRank = 16;

class RankSolver {
 public:
  explicit RankSolver(size_t n) : parent_(n), rank_(n, -1) { std::iota(parent_.begin(), parent_.end(), 0); }

  int find(int a) { return parent_[a] == a ? a : parent_[a] = find(parent_[a]); }
  void fix(int a, int r) {
    if (r < 0 || r > kMaxRank) throw SkipRule("rank " + std::to_string(r) + " out of range 0.." + std::to_string(kMaxRank));
    int ra = find(a);
    if (rank_[ra] >= 0 && rank_[ra] != r)
      throw SkipRule("operand ranks conflict (" + std::to_string(rank_[ra]) + " vs " + std::to_string(r) + ")");
    rank_[ra] = r;
  }
  void equal(int a, int b) {
    int ra = find(a), rb = find(b);
    if (ra == rb) return;
    int r = rank_[rb];
    parent_[rb] = ra;
    if (r >= 0) fix(ra, r);
  }
  int rank(int a) { return rank_[find(a)]; }

 private:
  std::vector<int> parent_;
  std::vector<int> rank_;
};

/// The rank equalities and fixed ranks of each node, from its operator's rank signature (rules/
/// rank_signature.h, read off the shape rule), but for the source formats' own conventions: TASO's and Tensat's
/// matmuls take operands of equal rank (ours broadcast), their splits name no reference (the builder finds the
/// cut, so a split has its input's rank), and their constants no operand (the builder adds the reference: only
/// the output's rank is known). Attributes no rank fits add nothing; the built rule's shape check refuses it.
std::vector<int> solve_ranks(const SourceRule& rule) {
  RankSolver s(rule.nodes.size());
  for (size_t i = 0; i < rule.nodes.size(); ++i) {
    const SourceNode& n = rule.nodes[i];
    int id = static_cast<int>(i);
    const auto& c = n.children;
    if (n.rank_hint != -1) s.fix(id, n.rank_hint);
    if (n.op == OpKind::Var) continue;  // ranks implied by the operators win over var_ranks (below)
    if (n.op == OpKind::Matmul) {
      for (int ch : c) s.equal(id, ch);
      continue;
    }
    if (n.op == OpKind::Split) {
      s.equal(id, c[0]);
      continue;
    }
    const bool constant = is_constant(n.op);
    const size_t operands = constant ? static_cast<size_t>(op_info(n.op).min_children) : c.size();
    const RankSignature& sig = rank_signature(n.op, n.attrs, operands);
    if (!sig.accepts) continue;
    if (sig.output_fixed) s.fix(id, *sig.output_fixed);
    if (constant) continue;
    for (size_t k = 0; k < c.size(); ++k)
      if (sig.operands[k].fixed) s.fix(c[k], *sig.operands[k].fixed);
    for (auto [x, y] : sig.equal_operands) s.equal(c[x], c[y]);
    if (sig.output_equals) s.equal(id, c[*sig.output_equals]);
  }
  // A variable the operators leave open takes its rank from var_ranks (TASO's generator inputs). The
  // operators come first because rule files from other generator setups reuse the names for other ranks.
  for (size_t i = 0; i < rule.nodes.size(); ++i) {
    const SourceNode& n = rule.nodes[i];
    if (n.op != OpKind::Var || s.rank(static_cast<int>(i)) >= 0) continue;
    if (auto it = rule.var_ranks.find(n.var); it != rule.var_ranks.end()) s.fix(static_cast<int>(i), it->second);
  }
  std::vector<int> ranks(rule.nodes.size());
  for (size_t i = 0; i < ranks.size(); ++i) ranks[i] = s.rank(static_cast<int>(i));
  return ranks;
}

// --- concat boundaries -----------------------------------------------------------------------------
// A boundary on an axis says "this tensor was concatenated here, at ref.dim(ref_axis)". Like TASO's
// SplitInfo it remembers the boundaries inside each half, so that splitting a split finds the inner cut.
struct Boundary {
  ExprId ref;
  int64_t ref_axis = 0;
  std::shared_ptr<const Boundary> left, right;  // boundaries within part 0 and part 1 of the cut
};
using BoundaryPtr = std::shared_ptr<const Boundary>;
using Boundaries = std::map<int64_t, BoundaryPtr>;  // absolute axis -> boundary

struct Built {
  ExprId id;
  int rank = -1;  // -1: unknown
  Boundaries bnd;
};

// Where a constant found inside a term takes its size from (see docs/importers.md).
struct Context {
  std::optional<ExprId> kernel_like;  // data input of the conv whose weight we are inside
  std::optional<ExprId> eye_like;     // reference whose last dim is an identity's size (matmul operand)
  std::optional<ExprId> sibling;      // operand of an enclosing ewadd/ewmul: same shape
  bool in_conv_weight = false;

  /// Only what stays valid below an operator that keeps channels but not the shape (pool, concat, ...).
  Context channels_only() const {
    Context c;
    c.kernel_like = kernel_like;
    c.in_conv_weight = in_conv_weight;
    return c;
  }
  static Context conv_weight(ExprId data) {
    Context c;
    c.kernel_like = data;
    c.in_conv_weight = true;
    return c;
  }
  static Context eye_sized_by(std::optional<ExprId> ref) {
    Context c;
    c.eye_like = ref;
    return c;
  }
};

class Builder {
 public:
  Builder(const SourceRule& rule, std::vector<int> ranks) : rule_(rule), ranks_(std::move(ranks)) {}

  Expr build_root(int root) {
    expr_ = Expr();
    memo_.clear();
    Built b = build(root, Context{});
    expr_.add_root(b.id);
    if (tree_size(expr_, b.id) > kMaxTreeNodes)
      throw SkipRule("a pattern has more than " + std::to_string(kMaxTreeNodes) + " nodes when written as a tree");
    return std::move(expr_);
  }

 private:
  // Whether the subterm holds a constant that must be sized from outside: conv2d and matmul size the
  // constants inside their operands themselves, so the search stops there.
  bool has_constant(int node) {
    if (has_constant_.empty()) has_constant_.assign(rule_.nodes.size(), -1);
    int8_t& memo = has_constant_[node];
    if (memo >= 0) return memo;
    const SourceNode& n = rule_.nodes[node];
    bool found = is_constant(n.op);
    if (n.op != OpKind::Conv2d && n.op != OpKind::Matmul)
      for (int c : n.children) found = found || has_constant(c);
    memo = found;
    return found;
  }

  // A subterm for a message, cut short: rules from files may be DAGs that are huge as trees.
  std::string show(ExprId id) const {
    std::string out;
    show_into(id, out);
    return out.size() > 120 ? out.substr(0, 117) + "..." : out;
  }
  void show_into(ExprId id, std::string& out) const {
    if (out.size() > 120) return;
    const ExprNode& n = expr_[id];
    if (n.op == OpKind::Var) {
      out += "?" + n.name;
      return;
    }
    out += "(" + std::string(op_name(n.op));
    for (int64_t a : n.attrs) out += " " + std::to_string(a);
    for (ExprId c : n.children) {
      out += " ";
      show_into(c, out);
    }
    out += ")";
  }

  // Nodes of the subterm written as a tree, saturating just above the limit.
  static size_t tree_size(const Expr& e, ExprId root) {
    std::vector<size_t> size(e.size(), 0);
    for (size_t i = 0; i <= root.value; ++i) {
      size[i] = 1;
      for (ExprId c : e.nodes()[i].children) size[i] = std::min(size[i] + size[c.value], kMaxTreeNodes + 1);
    }
    return size[root.value];
  }

  // Built subterms by (node, context). A subterm without constants does not depend on the context,
  // so it is built once; hash-consing keeps the contexts of the others few. Without this a shared
  // subterm would be rebuilt once per path to it, exponentially often in a DAG.
  using MemoKey = std::tuple<int, int64_t, int64_t, int64_t, bool>;
  Built build(int node, const Context& ctx) {
    auto opt = [](const std::optional<ExprId>& id) { return id ? static_cast<int64_t>(id->value) : int64_t{-1}; };
    MemoKey key = has_constant(node) ? MemoKey{node, opt(ctx.kernel_like), opt(ctx.eye_like), opt(ctx.sibling),
                                                ctx.in_conv_weight}
                                     : MemoKey{node, -1, -1, -1, false};
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    Built b = build_uncached(node, ctx);
    memo_.emplace(key, b);
    return b;
  }

  Built build_uncached(int node, const Context& ctx) {
    const SourceNode& n = rule_.nodes[node];
    const int rank = ranks_[node];
    const auto& c = n.children;
    switch (n.op) {
      case OpKind::Var: return {expr_.add_var(n.var), rank, {}};
      case OpKind::Relu:
      case OpKind::Tanh:
      case OpKind::Sigmoid: {
        Built x = build(c[0], ctx);
        return {expr_.add(n.op, n.attrs, {x.id}), rank, x.bnd};
      }
      case OpKind::Smul: {
        Built x = build(c[0], ctx);
        Built s = build(c[1], Context{});
        return {expr_.add(n.op, n.attrs, {x.id, s.id}), rank, x.bnd};
      }
      case OpKind::EwAdd:
      case OpKind::EwSub:
      case OpKind::EwMul:
      case OpKind::EwDiv: return build_elementwise(n, rank, ctx);
      case OpKind::Matmul: return build_matmul(n, rank);
      case OpKind::Conv2d: {
        // Kernel constants in the weight take their channels from the data input; a constant used as the
        // data input (TASO's generator does that with iconv) takes them from the weight's in-channels.
        std::optional<Built> x, w;
        if (has_constant(c[0]) && !has_constant(c[1])) {
          w = build(c[1], Context{});
          x = build(c[0], Context::conv_weight(w->id));
        } else {
          x = build(c[0], Context{});
          w = build(c[1], Context::conv_weight(x->id));
        }
        Built out{expr_.add(n.op, n.attrs, {x->id, w->id}), rank, {}};
        copy_axis(x->bnd, 0, out.bnd, 0);
        copy_axis(w->bnd, 0, out.bnd, 1);
        return out;
      }
      case OpKind::MaxPool:
      case OpKind::AvgPool:
      case OpKind::Enlarge: {
        // Channels (axes 0 and 1) are kept, so a conv-kernel reference stays valid; the shape is not.
        Built x = build(c[0], ctx.channels_only());
        Built out{expr_.add(n.op, n.attrs, {x.id}), rank, {}};
        copy_axis(x.bnd, 0, out.bnd, 0);
        copy_axis(x.bnd, 1, out.bnd, 1);
        return out;
      }
      case OpKind::Merge: {
        // Output channels (axis 0) are kept; the input channels grow, so no kernel reference survives.
        Built x = build(c[0], Context{});
        Built out{expr_.add(n.op, n.attrs, {x.id}), rank, {}};
        copy_axis(x.bnd, 0, out.bnd, 0);
        return out;
      }
      case OpKind::Transpose: {
        Built x = build(c[0], Context::eye_sized_by(ctx.eye_like));  // a transposed identity is an identity
        Built out{expr_.add(n.op, n.attrs, {x.id}), rank, {}};
        int64_t to = 0;
        for (int64_t from : n.attrs) copy_axis(x.bnd, from, out.bnd, to++);  // out.dim(i) = x.dim(perm[i])
        return out;
      }
      case OpKind::Noop:
      case OpKind::BatchNorm: {
        // The value (noop) or shape (batchnorm) of the first operand, so its concat boundaries too.
        std::vector<ExprId> kids;
        Boundaries bnd;
        for (size_t k = 0; k < c.size(); ++k) {
          Built b = build(c[k], Context{});
          if (k == 0) bnd = b.bnd;
          kids.push_back(b.id);
        }
        return {expr_.add(n.op, n.attrs, kids), rank, bnd};
      }
      case OpKind::Concat: return build_concat(n, rank, ctx);
      case OpKind::Split: return build_split(n, rank, ctx);
      case OpKind::Ones:
      case OpKind::Eye:
      case OpKind::IConv:
      case OpKind::PoolKernel: return build_constant(n, rank, ctx);
      default: {
        std::vector<ExprId> kids;
        for (int ch : c) kids.push_back(build(ch, Context{}).id);
        return {expr_.add(n.op, n.attrs, kids), rank, {}};
      }
    }
  }

  static void copy_axis(const Boundaries& from, int64_t from_axis, Boundaries& to, int64_t to_axis) {
    auto it = from.find(from_axis);
    if (it != from.end()) to[to_axis] = it->second;
  }

  Built build_elementwise(const SourceNode& n, int rank, const Context& ctx) {
    // Build the operand without constants first, so that a constant can take its sibling's shape.
    int first = 0;
    if (has_constant(n.children[0]) && !has_constant(n.children[1])) first = 1;
    Built a = build(n.children[first], ctx);
    Context second_ctx = ctx;
    second_ctx.sibling = a.id;
    Built b = build(n.children[1 - first], second_ctx);
    if (first == 1) std::swap(a, b);
    Built out{expr_.add(n.op, n.attrs, {a.id, b.id}), rank, a.bnd};
    for (const auto& [axis, bnd] : b.bnd) out.bnd.emplace(axis, bnd);  // a's boundary wins
    return out;
  }

  Built build_matmul(const SourceNode& n, int rank) {
    const int ia = n.children[0], ib = n.children[1];
    std::optional<Built> a, b;
    if (has_constant(ia) && !has_constant(ib)) {
      // The identity on the left of a matmul is m x m with m = b.dim(-2): refer to b transposed.
      b = build(ib, Context{});
      int rb = ranks_[ib];
      if (rb < 2) throw SkipRule("identity as the first matmul operand: rank of " + show(b->id) + " unknown");
      std::vector<int64_t> perm(rb);
      std::iota(perm.begin(), perm.end(), 0);
      std::swap(perm[rb - 1], perm[rb - 2]);
      ExprId bt = expr_.add(OpKind::Transpose, perm, {b->id});
      a = build(ia, Context::eye_sized_by(bt));
    } else {
      a = build(ia, Context{});
      b = build(ib, Context::eye_sized_by(a->id));
    }
    Built out{expr_.add(n.op, n.attrs, {a->id, b->id}), rank, {}};
    const int ra = ranks_[ia], rb = ranks_[ib];
    if (rank >= 2 && ra >= 2 && rb >= 2) {
      copy_axis(a->bnd, ra - 2, out.bnd, rank - 2);
      copy_axis(b->bnd, rb - 1, out.bnd, rank - 1);
      for (int d = 0; d < rank - 2; ++d) copy_axis(a->bnd, d - (rank - ra), out.bnd, d);
    }
    return out;
  }

  Built build_concat(const SourceNode& n, int rank, const Context& ctx) {
    Context child_ctx = ctx.channels_only();
    std::vector<Built> parts;
    std::vector<ExprId> ids;
    for (int ch : n.children) {
      parts.push_back(build(ch, child_ctx));
      ids.push_back(parts.back().id);
    }
    int64_t axis = n.attrs.at(0);
    if (axis < 0 && rank >= 0) axis += rank;
    Built out{expr_.add(n.op, {axis}, ids), rank, {}};
    // Axes other than the concat axis keep a boundary that all operands share.
    for (const auto& [ax, bnd] : parts[0].bnd) {
      if (ax == axis) continue;
      bool shared = true;
      for (size_t k = 1; k < parts.size(); ++k) {
        auto it = parts[k].bnd.find(ax);
        shared = shared && it != parts[k].bnd.end() && it->second->ref == bnd->ref &&
                 it->second->ref_axis == bnd->ref_axis;
      }
      if (shared) out.bnd[ax] = bnd;
    }
    if (parts.size() == 2) {
      auto inner = [&](const Built& b) {
        auto it = b.bnd.find(axis);
        return it == b.bnd.end() ? nullptr : it->second;
      };
      out.bnd[axis] = std::make_shared<Boundary>(Boundary{parts[0].id, axis, inner(parts[0]), inner(parts[1])});
    }
    return out;
  }

  Built build_split(const SourceNode& n, int rank, const Context& ctx) {
    Built x = build(n.children[0], ctx.channels_only());
    int64_t axis = n.attrs.at(0), part = n.attrs.at(1);
    if (axis < 0 && rank >= 0) axis += rank;
    auto it = x.bnd.find(axis);
    if (it == x.bnd.end() || !it->second)
      throw SkipRule("split on axis " + std::to_string(axis) + ": no concat boundary in " + show(x.id));
    const Boundary& cut = *it->second;
    Built out{expr_.add(OpKind::Split, {axis, part, cut.ref_axis}, {x.id, cut.ref}), rank, x.bnd};
    BoundaryPtr inner = part == 0 ? cut.left : cut.right;
    if (inner)
      out.bnd[axis] = inner;
    else
      out.bnd.erase(axis);
    return out;
  }

  Built build_constant(const SourceNode& n, int rank, const Context& ctx) {
    std::optional<ExprId> like;
    std::string name(op_name(n.op));
    switch (n.op) {
      case OpKind::Ones:
        like = ctx.sibling;
        if (!like)
          throw SkipRule(ctx.in_conv_weight ? "ones inside a conv weight without a same-shape sibling operand"
                                            : "ones without a same-shape sibling operand to size it");
        break;
      case OpKind::Eye:
        like = ctx.eye_like ? ctx.eye_like : ctx.sibling;
        if (!like) throw SkipRule("identity matrix outside a matmul operand and without a sibling to size it");
        break;
      default:  // iconv, pool_kernel: channels (dim 1 of like) of the conv they feed
        like = ctx.kernel_like;
        if (!like && ctx.sibling && rank == 4) {
          // A same-shape sibling kernel: iconv [C,C,kh,kw] has C at dim 1 already; pool_kernel [C,1,kh,kw]
          // has C at dim 0, so refer to the sibling with its first two axes swapped.
          like = n.op == OpKind::IConv ? *ctx.sibling : expr_.add(OpKind::Transpose, {1, 0, 2, 3}, {*ctx.sibling});
        }
        if (!like)
          throw SkipRule(name + " outside a conv and without a same-shape sibling: nothing to take its channels from");
        break;
    }
    return {expr_.add(n.op, n.attrs, {*like}), rank, {}};
  }

  const SourceRule& rule_;
  std::vector<int> ranks_;
  Expr expr_;
  std::vector<int8_t> has_constant_;  // -1 unknown, else 0/1
  std::map<MemoKey, Built> memo_;     // per pattern (ExprIds refer to expr_)
};

}  // namespace

BuiltPatterns build_patterns(const SourceRule& rule) {
  if (rule.lhs.empty() || rule.lhs.size() != rule.rhs.size())
    throw SkipRule("needs as many source as target outputs (got " + std::to_string(rule.lhs.size()) + " and " +
                   std::to_string(rule.rhs.size()) + ")");
  Builder builder(rule, solve_ranks(rule));
  BuiltPatterns out;
  for (int r : rule.lhs) out.lhs.push_back(builder.build_root(r));
  for (int r : rule.rhs) out.rhs.push_back(builder.build_root(r));
  return out;
}

}  // namespace teq::import_detail
