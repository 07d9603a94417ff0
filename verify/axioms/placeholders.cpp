#include "verify/axioms/placeholders.h"

#include "rules/ops/constants.h"
#include "rules/ops/conv.h"
#include "rules/ops/layout.h"
#include "rules/ops/matmul.h"
#include "rules/ops/pool.h"

namespace teq::axioms {
namespace {

/// What an operator's attributes give the placeholders, through its named accessors; nothing for an operator
/// that no template writes with a placeholder.
template <OpKind K>
struct PlaceholdersOf {
  static void add(AttrSpan, PlaceholderValues&) {}
};

template <>
struct PlaceholdersOf<OpKind::Concat> {
  static void add(AttrSpan a, PlaceholderValues& v) { v['X'].insert({ops::concat_axis(a)}); }
};

template <>
struct PlaceholdersOf<OpKind::Split> {
  static void add(AttrSpan a, PlaceholderValues& v) {
    const ops::SplitAttrs s = ops::split_attrs(a);
    v['X'].insert({s.axis});
    v['Q'].insert({s.part});
  }
};

template <>
struct PlaceholdersOf<OpKind::Matmul> {
  static void add(AttrSpan a, PlaceholderValues& v) {
    v['A'].insert({static_cast<int64_t>(ops::matmul_activation(a))});
  }
};

template <>
struct PlaceholdersOf<OpKind::Conv2d> {
  static void add(AttrSpan a, PlaceholderValues& v) {
    const ops::ConvAttrs c = ops::conv_attrs(a);
    v['C'].insert({c.sh, c.sw, c.ph, c.pw});
    v['A'].insert({static_cast<int64_t>(c.act)});
  }
};

template <>
struct PlaceholdersOf<OpKind::Enlarge> {
  static void add(AttrSpan a, PlaceholderValues& v) {
    const ops::EnlargeAttrs e = ops::enlarge_attrs(a);
    v['K'].insert({e.kh, e.kw});
  }
};

/// iconv's and pool_kernel's kernel size.
struct KernelConstantPlaceholders {
  static void add(AttrSpan a, PlaceholderValues& v) {
    const ops::KernelSize k = ops::kernel_constant_size(a);
    v['K'].insert({k.kh, k.kw});
  }
};
template <>
struct PlaceholdersOf<OpKind::IConv> : KernelConstantPlaceholders {};
template <>
struct PlaceholdersOf<OpKind::PoolKernel> : KernelConstantPlaceholders {};

/// maxpool's and avgpool's window (avgpool's include_pad is written in the templates).
struct PoolPlaceholders {
  static void add(AttrSpan a, PlaceholderValues& v) {
    const ops::PoolAttrs p = ops::pool_attrs(a);
    v['P'].insert({p.kh, p.kw, p.sh, p.sw, p.ph, p.pw});
  }
};
template <>
struct PlaceholdersOf<OpKind::MaxPool> : PoolPlaceholders {};
template <>
struct PlaceholdersOf<OpKind::AvgPool> : PoolPlaceholders {};

/// One entry per line of op_list.inc, indexed by OpKind.
constexpr void (*kAdd[])(AttrSpan, PlaceholderValues&) = {
#define TEQ_OP(kind, ...) &PlaceholdersOf<OpKind::kind>::add,
#include "rules/op_list.inc"
#undef TEQ_OP
};

}  // namespace

PlaceholderValues placeholder_values(const Rule& rule) {
  PlaceholderValues v;
  for (const auto* side : {&rule.lhs, &rule.rhs})
    for (const Expr& e : *side)
      for (const ExprNode& n : e.nodes()) kAdd[static_cast<size_t>(n.op)](n.attrs, v);
  v['Y'] = v['X'];
  return v;
}

}  // namespace teq::axioms
