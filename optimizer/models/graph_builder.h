// GraphBuilder: writes a model as an Expr through the operator vocabulary, tracking each node's shape
// (so layers can ask for their input's channels) and naming weights uniquely. Used by the built-in
// models only; a shape mistake throws ShapeError at the layer that made it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "rules/expr.h"
#include "rules/shape.h"

namespace teq::models {

/// Padding value that means SAME (TF/TASO convention, rules/ops/common.h).
inline constexpr int64_t kSame = -1;

/// One convolution layer; the weight [out, C/groups, kh, kw] is created by GraphBuilder::conv2d.
struct ConvLayer {
  int64_t out = 0;
  int64_t kh = 1, kw = 1;
  int64_t sh = 1, sw = 1;
  int64_t ph = kSame, pw = kSame;  // kSame or explicit symmetric padding
  Activation act = Activation::None;
  int64_t groups = 1;
};

class GraphBuilder {
 public:
  ExprId input(std::string name, Shape shape);
  /// A weight named "<prefix><n>" with n counting per prefix, so every weight is a distinct leaf.
  ExprId weight(const std::string& prefix, Shape shape);
  /// Any operator; infers and records its shape (throws ShapeError when it does not fit).
  ExprId op(OpKind kind, std::vector<int64_t> attrs, std::vector<ExprId> children);

  const Shape& shape(ExprId id) const { return shapes_.at(id.value); }
  int64_t dim(ExprId id, size_t axis) const { return shape(id).at(axis); }

  ExprId conv2d(ExprId x, const ConvLayer& layer);
  ExprId matmul(ExprId a, ExprId b, Activation act = Activation::None);
  /// x [.., k] times a new weight [k, out].
  ExprId dense(ExprId x, int64_t out, Activation act = Activation::None);
  ExprId relu(ExprId x) { return op(OpKind::Relu, {}, {x}); }
  ExprId sigmoid(ExprId x) { return op(OpKind::Sigmoid, {}, {x}); }
  ExprId tanh(ExprId x) { return op(OpKind::Tanh, {}, {x}); }
  ExprId add(ExprId a, ExprId b) { return op(OpKind::EwAdd, {}, {a, b}); }
  ExprId mul(ExprId a, ExprId b) { return op(OpKind::EwMul, {}, {a, b}); }
  ExprId maxpool(ExprId x, int64_t k, int64_t s, int64_t pad);
  /// Average pooling; padding counts in the divisor (include_pad = 1), as in TASO and cuDNN's default.
  ExprId avgpool(ExprId x, int64_t k, int64_t s, int64_t pad);
  ExprId concat(int64_t axis, std::vector<ExprId> parts);
  ExprId reshape(ExprId x, Shape to);
  ExprId transpose(ExprId x, std::vector<int64_t> perm);
  ExprId softmax(ExprId x, int64_t axis) { return op(OpKind::Softmax, {axis}, {x}); }
  /// global_avgpool, flatten to [N, C], then a fully connected layer to `classes`.
  ExprId classifier(ExprId x, int64_t classes);

  /// The finished graph with these outputs as roots.
  Expr finish(const std::vector<ExprId>& outputs) &&;

 private:
  Expr expr_;
  std::vector<Shape> shapes_;
  std::map<std::string, int> counters_;
};

}  // namespace teq::models
