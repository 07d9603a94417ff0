// Id<Tag>: a typed index, so that an e-class id cannot be passed where an e-node or term id is expected.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace teq {

template <class Tag>
struct Id {
  uint32_t value = 0;
  constexpr Id() = default;
  constexpr explicit Id(uint32_t v) : value(v) {}
  constexpr explicit Id(size_t v) : value(static_cast<uint32_t>(v)) {}
  constexpr explicit Id(int v) : value(static_cast<uint32_t>(v)) {}
  friend constexpr auto operator<=>(Id, Id) = default;
  friend constexpr bool operator==(Id, Id) = default;
};

/// Hash of an operator node (term node or e-node): operator, attributes, child ids, leaf name. One
/// definition for Expr's hash-consing and the e-graph's memo.
template <class Op, class Tag>
size_t node_hash(Op op, std::span<const int64_t> attrs, std::span<const Id<Tag>> children, const std::string& name) {
  size_t h = std::hash<int>{}(static_cast<int>(op));
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (int64_t a : attrs) mix(std::hash<int64_t>{}(a));
  for (Id<Tag> c : children) mix(c.value);
  if (!name.empty()) mix(std::hash<std::string>{}(name));
  return h;
}

}  // namespace teq

template <class Tag>
struct std::hash<teq::Id<Tag>> {
  size_t operator()(teq::Id<Tag> id) const noexcept { return std::hash<uint32_t>{}(id.value); }
};
