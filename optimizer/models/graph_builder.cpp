#include "optimizer/models/graph_builder.h"

#include "rules/semantics.h"

namespace teq::models {

ExprId GraphBuilder::input(std::string name, Shape shape) {
  ExprId id = expr_.add(ExprNode{OpKind::Input, shape, {}, std::move(name)});
  if (id.value == shapes_.size()) shapes_.push_back(std::move(shape));
  return id;
}

ExprId GraphBuilder::weight(const std::string& prefix, Shape shape) {
  std::string name = prefix + std::to_string(counters_[prefix]++);
  ExprId id = expr_.add(ExprNode{OpKind::Weight, shape, {}, std::move(name)});
  shapes_.push_back(std::move(shape));  // names are fresh, so the node is new
  return id;
}

ExprId GraphBuilder::op(OpKind kind, std::vector<int64_t> attrs, std::vector<ExprId> children) {
  std::vector<Shape> in;
  for (ExprId c : children) in.push_back(shape(c));
  Shape out = infer_shape(kind, attrs, in);
  ExprId id = expr_.add(kind, std::move(attrs), std::move(children));
  // Hash-consing returns the existing node for a repeated subterm (e.g. the same pooling twice).
  if (id.value == shapes_.size()) shapes_.push_back(std::move(out));
  return id;
}

ExprId GraphBuilder::conv2d(ExprId x, const ConvLayer& l) {
  ExprId w = weight("conv", {l.out, dim(x, 1) / l.groups, l.kh, l.kw});
  return op(OpKind::Conv2d, {l.sh, l.sw, l.ph, l.pw, static_cast<int64_t>(l.act)}, {x, w});
}

ExprId GraphBuilder::matmul(ExprId a, ExprId b, Activation act) {
  return op(OpKind::Matmul, {static_cast<int64_t>(act)}, {a, b});
}

ExprId GraphBuilder::dense(ExprId x, int64_t out, Activation act) {
  const Shape& s = shape(x);
  return matmul(x, weight("fc", {s.back(), out}), act);
}

ExprId GraphBuilder::maxpool(ExprId x, int64_t k, int64_t s, int64_t pad) {
  return op(OpKind::MaxPool, {k, k, s, s, pad, pad}, {x});
}

ExprId GraphBuilder::avgpool(ExprId x, int64_t k, int64_t s, int64_t pad) {
  return op(OpKind::AvgPool, {k, k, s, s, pad, pad, 1}, {x});
}

ExprId GraphBuilder::concat(int64_t axis, std::vector<ExprId> parts) {
  return op(OpKind::Concat, {axis}, std::move(parts));
}

ExprId GraphBuilder::reshape(ExprId x, Shape to) { return op(OpKind::Reshape, std::move(to), {x}); }

ExprId GraphBuilder::transpose(ExprId x, std::vector<int64_t> perm) {
  return op(OpKind::Transpose, std::move(perm), {x});
}

ExprId GraphBuilder::classifier(ExprId x, int64_t classes) {
  ExprId pooled = op(OpKind::GlobalAvgPool, {}, {x});
  ExprId flat = reshape(pooled, {dim(x, 0), dim(x, 1)});
  return dense(flat, classes);
}

Expr GraphBuilder::finish(const std::vector<ExprId>& outputs) && {
  for (ExprId o : outputs) expr_.add_root(o);
  return std::move(expr_);
}

}  // namespace teq::models
