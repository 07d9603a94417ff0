#include "rules/semantics.h"

#include <string>

namespace teq {

namespace {
void check_arity(const OpInfo& info, AttrSpan attrs, std::span<const Shape> in) {
  const int n = static_cast<int>(in.size());
  bool ok = n >= info.min_children && (info.max_children == kVariadic || n <= info.max_children);
  shape_check(ok, info.name,
              "expects " + std::to_string(info.min_children) +
                  (info.max_children == kVariadic ? " or more"
                   : info.max_children == info.min_children
                       ? ""
                       : " to " + std::to_string(info.max_children)) +
                  " operands, got " + std::to_string(n),
              in);
  shape_check(attr_count_fits(info, attrs.size()), info.name,
              "expects " + attr_count_text(info) + " integer attributes, got " +
                  std::to_string(attrs.size()),
              in);
}
}  // namespace

Shape infer_shape(OpKind op, AttrSpan attrs, std::span<const Shape> in) {
  using namespace ops;
  const OpInfo& info = op_info(op);
  check_arity(info, attrs, in);
  if (is_elementwise(op)) return shape_elementwise(info, attrs, in);
  switch (op) {
    case OpKind::Noop:
    case OpKind::Ones: return in[0];
    case OpKind::Broadcast: return shape_broadcast(attrs, in);
    case OpKind::Matmul: return shape_matmul(attrs, in);
    case OpKind::Conv2d: return shape_conv2d(attrs, in);
    case OpKind::Enlarge: return shape_enlarge(attrs, in);
    case OpKind::Merge: return shape_merge(attrs, in);
    case OpKind::MaxPool:
    case OpKind::AvgPool: return shape_pool(info.name, attrs, in);
    case OpKind::GlobalAvgPool: return shape_global_avgpool(in);
    case OpKind::Concat: return shape_concat(attrs, in);
    case OpKind::Split: return shape_split(attrs, in);
    case OpKind::Slice: return shape_slice(attrs, in);
    case OpKind::Transpose: return shape_transpose(attrs, in);
    case OpKind::Reshape: return shape_reshape(attrs, in);
    case OpKind::Pad: return shape_pad(attrs, in);
    case OpKind::ReduceMean: return shape_reduce_mean(attrs, in);
    case OpKind::BatchNorm: return shape_batchnorm(in);
    case OpKind::Softmax: return shape_softmax(attrs, in);
    case OpKind::Eye: return shape_eye(in);
    case OpKind::IConv:
    case OpKind::PoolKernel: return shape_kernel_constant(info.name, attrs, in);
    case OpKind::Opaque: return shape_opaque(attrs, in);
    case OpKind::Var:
    case OpKind::Input:
    case OpKind::Weight: break;
    default: break;  // the element-wise operators, answered above
  }
  throw std::logic_error("infer_shape: operator " + std::string(info.name) + " has no shape rule");
}

}  // namespace teq
