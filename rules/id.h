// Id<Tag>: a typed index, so that an e-class id cannot be passed where an e-node or term id is expected.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

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

}  // namespace teq

template <class Tag>
struct std::hash<teq::Id<Tag>> {
  size_t operator()(teq::Id<Tag> id) const noexcept { return std::hash<uint32_t>{}(id.value); }
};
