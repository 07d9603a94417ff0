#include "synth/operand_index.h"

#include <algorithm>

#include "rules/symbolic_dims.h"
#include "synth/fingerprint.h"

namespace teq::synth {

namespace {

/// Collects operand-0/operand-1 axis equalities among the conjuncts of condition `id`.
void collect_equalities(const SymbolicArena& arena, uint32_t id, std::vector<std::pair<uint32_t, uint32_t>>& out) {
  const SymNode& t = arena[id];
  if (t.op == SymOp::And) {
    collect_equalities(arena, t.a, out);
    collect_equalities(arena, t.b, out);
    return;
  }
  if (t.op != SymOp::Eq) return;
  const SymNode &x = arena[t.a], &y = arena[t.b];
  if (x.op != SymOp::Operand || y.op != SymOp::Operand || x.value == y.value) return;
  if (x.value == 0 && y.value == 1) out.emplace_back(x.axis, y.axis);
  else if (x.value == 1 && y.value == 0) out.emplace_back(y.axis, x.axis);
}

}  // namespace

std::optional<std::vector<std::pair<uint32_t, uint32_t>>> operand_equalities(const OpVariant& v, size_t r0,
                                                                              size_t r1) {
  SymbolicArena arena;
  const size_t ranks[2] = {r0, r1};
  const std::optional<SymbolicShape> s = symbolic_shape(arena, v.op, v.attrs, std::span<const size_t>(ranks, 2));
  if (!s) return std::nullopt;
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const SymCond& c : s->conditions) collect_equalities(arena, c.id, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

size_t SecondOperandIndex::KeyHash::operator()(const std::vector<int64_t>& k) const {
  uint64_t h = mix64(k.size());
  for (int64_t d : k) h = mix64(h ^ static_cast<uint64_t>(d));
  return static_cast<size_t>(h);
}

SecondOperandIndex::SecondOperandIndex(const OpVariant& v, const std::vector<ShapePair>& shapes,
                                       std::span<const uint32_t> offered)
    : v_(v), shapes_(&shapes) {
  std::map<std::pair<size_t, size_t>, size_t> group_of;
  for (uint32_t id : offered) {
    const ShapePair& p = (*shapes_)[id];
    auto [it, fresh] = group_of.try_emplace({p.a.size(), p.b.size()}, groups_.size());
    if (fresh) groups_.push_back(RankGroup{p.a.size(), p.b.size(), {}});
    groups_[it->second].ids.push_back(id);
  }
}

SecondOperandIndex::Table& SecondOperandIndex::table(size_t ra0, size_t rb0, size_t group) {
  auto [it, fresh] = tables_.try_emplace({ra0, rb0, group});
  Table& t = it->second;
  if (!fresh) return t;
  const RankGroup& g = groups_[group];
  auto ea = operand_equalities(v_, ra0, g.ra);
  auto eb = operand_equalities(v_, rb0, g.rb);
  if (!ea || !eb) {
    t.refused = true;
    return t;
  }
  t.eq_a = std::move(*ea);
  t.eq_b = std::move(*eb);
  for (uint32_t id : g.ids) {
    const ShapePair& p = (*shapes_)[id];
    key_.clear();
    for (auto [i, j] : t.eq_a) key_.push_back(p.a[j]);
    for (auto [i, j] : t.eq_b) key_.push_back(p.b[j]);
    t.by_key[key_].push_back(id);
  }
  return t;
}

void SecondOperandIndex::candidates(const ShapePair& first, std::vector<uint32_t>& out) {
  out.clear();
  size_t groups_used = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Table& t = table(first.a.size(), first.b.size(), g);
    if (t.refused) continue;
    key_.clear();
    for (auto [i, j] : t.eq_a) key_.push_back(first.a[i]);
    for (auto [i, j] : t.eq_b) key_.push_back(first.b[i]);
    auto it = t.by_key.find(key_);
    if (it == t.by_key.end()) continue;
    out.insert(out.end(), it->second.begin(), it->second.end());
    ++groups_used;
  }
  if (groups_used > 1) std::sort(out.begin(), out.end());  // each group ascending; ids are in one group only
}

}  // namespace teq::synth
