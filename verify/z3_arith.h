// Arith<z3::expr>: the operator semantics instantiated on Z3 real terms. Non-linear point-wise functions
// are uninterpreted functions Real -> Real (one per UnaryFn), so a rule about tanh holds for every tanh;
// relu and max are ite terms.
#pragma once

#include <array>
#include <optional>

#include <z3++.h>

#include "rules/arith.h"

namespace teq {

template <>
struct Arith<z3::expr> {
  explicit Arith(z3::context& c) : ctx(&c) {}

  z3::expr constant(int64_t num, int64_t den = 1) const {
    return ctx->real_val(std::to_string(num).c_str()) / ctx->real_val(std::to_string(den).c_str());
  }
  z3::expr max(const z3::expr& a, const z3::expr& b) const { return z3::ite(a >= b, a, b); }
  z3::expr unary(UnaryFn fn, const z3::expr& x) const {
    auto& decl = functions[static_cast<size_t>(fn)];
    if (!decl) decl = ctx->function(unary_fn_name(fn), ctx->real_sort(), ctx->real_sort());
    return (*decl)(x);
  }

  z3::context* ctx;
  mutable std::array<std::optional<z3::func_decl>, kNumUnaryFns> functions;
};

}  // namespace teq
