#include "optimizer/engine/reshape_free.h"

#include <unordered_map>
#include <utility>
#include <vector>

#include "rules/evaluator.h"
#include "rules/semantics.h"

namespace teq {

namespace {

class Remover {
 public:
  Remover(const Expr& graph, const OpaqueFacts& opaque)
      : g_(graph), opaque_(opaque), shapes_(infer_shapes(graph, {})), readers_(graph.size()) {
    for (size_t i = 0; i < g_.size(); ++i)
      for (ExprId c : g_.nodes()[i].children)
        if (readers_[c.value].empty() || readers_[c.value].back() != i) readers_[c.value].push_back(i);
    for (ExprId r : g_.roots()) is_root_.emplace(r.value, true);
  }

  ReshapeFree run() {
    // Which reshapes go, and what each then reads (the leaves of its element-wise computation).
    std::unordered_map<uint32_t, std::vector<ExprId>> removed;  // outer reshape -> the old nodes it then reads
    for (size_t i = 0; i < g_.size(); ++i) {
      const ExprNode& node = g_.nodes()[i];
      if (node.op != OpKind::Reshape) continue;
      const ExprId operand = node.children[0];
      if (shapes_[operand.value] == shapes_[i]) {  // a reshape to the shape it has
        removed.emplace(static_cast<uint32_t>(i), std::vector<ExprId>{operand});
        continue;
      }
      if (!reshaped(operand) && !elementwise(g_[operand])) continue;
      Region region{shapes_[i], {}, {}};
      if (fits(operand, static_cast<uint32_t>(i), region)) removed.emplace(static_cast<uint32_t>(i), region.reads);
    }
    ReshapeFree out;
    out.removed = removed.size();
    if (removed.empty()) {
      out.graph = g_;
      return out;
    }
    // What the roots reach once those reshapes read their leaves instead of their operand.
    std::vector<bool> live(g_.size(), false);
    for (ExprId r : g_.roots()) live[r.value] = true;
    for (size_t i = g_.size(); i-- > 0;) {
      if (!live[i]) continue;
      auto it = removed.find(static_cast<uint32_t>(i));
      for (ExprId c : it != removed.end() ? it->second : g_.nodes()[i].children) live[c.value] = true;
    }
    std::vector<ExprId> to(g_.size());
    for (size_t i = 0; i < g_.size(); ++i) {
      if (!live[i]) continue;
      const ExprNode& node = g_.nodes()[i];
      if (removed.count(static_cast<uint32_t>(i))) {
        std::unordered_map<uint32_t, ExprId> done;
        const ExprId operand = node.children[0];
        to[i] = shapes_[operand.value] == shapes_[i] ? to[operand.value]
                                                     : rebuild(out.graph, operand, shapes_[i], to, done);
        continue;
      }
      ExprNode copy = node;
      for (ExprId& c : copy.children) c = to[c.value];
      to[i] = out.graph.add(std::move(copy));
    }
    for (ExprId r : g_.roots()) out.graph.add_root(to[r.value]);
    return out;
  }

 private:
  struct Region {
    Shape target;
    std::vector<uint32_t> interior;  // the element-wise nodes, which only the region and the outer reshape read
    std::vector<ExprId> reads;       // what the rebuilt computation reads
  };

  /// The operand `e` reshapes, when it is a reshape (the vocabulary's or an opaque one).
  std::optional<ExprId> reshaped(ExprId e) const {
    const ExprNode& node = g_[e];
    if (node.op == OpKind::Reshape) return node.children[0];
    if (node.op != OpKind::Opaque || !opaque_.reshape_operand) return std::nullopt;
    const std::optional<size_t> k = opaque_.reshape_operand(node);
    if (!k || *k >= node.children.size()) return std::nullopt;
    return node.children[*k];
  }

  bool elementwise(const ExprNode& node) const {
    return is_elementwise(node.op) || (node.op == OpKind::Opaque && opaque_.elementwise && opaque_.elementwise(node));
  }

  static bool scalar_operand(const Shape& operand, const Shape& node) { return operand.empty() && !node.empty(); }

  /// Whether `e` can be computed at the region's target shape without a reshape (collecting the region), and
  /// then whether the region's element-wise nodes are read only inside it or by the outer reshape `outer`.
  bool fits(ExprId e, uint32_t outer, Region& region) const {
    if (!collect(e, region)) return false;
    for (uint32_t n : region.interior)
      for (size_t r : readers_[n])
        if (r != outer && !in(region.interior, static_cast<uint32_t>(r))) return false;
    return true;
  }

  bool collect(ExprId e, Region& region) const {
    if (in(region.interior, e.value)) return true;
    const ExprNode& node = g_[e];
    const Shape& shape = shapes_[e.value];
    if (std::optional<ExprId> a = reshaped(e)) {
      if (shapes_[a->value] != region.target) return false;
      region.reads.push_back(*a);
      return true;
    }
    if (node.op == OpKind::Broadcast) {
      if (!broadcasts_alike(shapes_[node.children[0].value], shape, region.target)) return false;
      region.reads.push_back(node.children[0]);
      return true;
    }
    if (!elementwise(node) || is_root_.count(e.value)) return false;
    region.interior.push_back(e.value);
    for (ExprId k : node.children) {
      if (scalar_operand(shapes_[k.value], shape)) {
        region.reads.push_back(k);
        continue;
      }
      if (shapes_[k.value] != shape || !collect(k, region)) return false;
    }
    return true;
  }

  /// x broadcast to `inner`, then reshaped to `target`, is x broadcast to `target`: x varies only along trailing
  /// axes that the reshape leaves as they are (a number, a bias over the last axis).
  static bool broadcasts_alike(const Shape& x, const Shape& inner, const Shape& target) {
    size_t first_varying = 0;
    while (first_varying < x.size() && x[first_varying] == 1) ++first_varying;
    const size_t m = x.size() - first_varying;
    if (x.size() > target.size() || m > inner.size()) return false;
    for (size_t k = 1; k <= m; ++k)
      if (inner[inner.size() - k] != target[target.size() - k] || x[x.size() - k] != target[target.size() - k])
        return false;
    return true;
  }

  static bool in(const std::vector<uint32_t>& v, uint32_t x) {
    for (uint32_t y : v)
      if (y == x) return true;
    return false;
  }

  /// The old node `e` computed at `target` in `out`, reading the new ids `to` of what it reads.
  ExprId rebuild(Expr& out, ExprId e, const Shape& target, const std::vector<ExprId>& to,
                 std::unordered_map<uint32_t, ExprId>& done) const {
    if (auto it = done.find(e.value); it != done.end()) return it->second;
    const ExprNode& node = g_[e];
    ExprId y;
    if (std::optional<ExprId> a = reshaped(e)) {
      y = to[a->value];
    } else if (node.op == OpKind::Broadcast) {
      y = out.add(OpKind::Broadcast, {target.begin(), target.end()}, {to[node.children[0].value]});
    } else {
      std::vector<ExprId> kids;
      for (ExprId k : node.children)
        kids.push_back(scalar_operand(shapes_[k.value], shapes_[e.value]) ? to[k.value]
                                                                          : rebuild(out, k, target, to, done));
      std::vector<int64_t> attrs = node.attrs;
      if (node.op == OpKind::Opaque) {  // (opaque id output dims...): the dims are the target's now
        attrs.resize(2);
        attrs.insert(attrs.end(), target.begin(), target.end());
      }
      y = out.add(node.op, std::move(attrs), std::move(kids));
    }
    done.emplace(e.value, y);
    return y;
  }

  const Expr& g_;
  const OpaqueFacts& opaque_;
  const std::vector<Shape> shapes_;
  std::vector<std::vector<size_t>> readers_;
  std::unordered_map<uint32_t, bool> is_root_;
};

}  // namespace

ReshapeFree remove_reshapes_around_elementwise(const Expr& graph, const OpaqueFacts& opaque) {
  return Remover(graph, opaque).run();
}

}  // namespace teq
