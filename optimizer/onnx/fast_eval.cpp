#include "optimizer/onnx/fast_eval.h"

#include <cblas.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <type_traits>

#include "rules/evaluator.h"
#include "rules/ops/matmul.h"
#include "rules/semantics.h"

namespace teq::onnx_io {

namespace {

// C[m,n] = A[m,k] * B[k,n], row-major with leading dimensions lda, ldb, ldc.
void gemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b, int64_t ldb, double* c,
          int64_t ldc) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), 0.0, c,
              static_cast<blasint>(ldc));
}
void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
          int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), 0.0f, c,
              static_cast<blasint>(ldc));
}

/// The fused activation of the generic definition (ops::activate), applied to every element.
template <class S>
void activate_all(Activation act, std::vector<S>& data) {
  if (act == Activation::None) return;
  const Arith<S> ar;
  for (S& v : data) v = ops::activate(ar, act, v);
}

/// conv2d as ops::eval_conv2d defines it (windows from ops::window_1d, groups from the shapes, dilated taps), computed
/// per image and group as weight[Og, Cg*KH*KW] x columns[Cg*KH*KW, OH*OW] (im2col; a 1x1 unpadded
/// stride-1 convolution reads the input directly). The columns are made for a band of output rows at a
/// time, so that they stay near kColumnElements (VGG's first layers would need 230 MB at once).
template <class S>
Tensor<S> conv2d(AttrSpan attrs, ops::Args<S> in, const Shape& out_shape) {
  constexpr int64_t kColumnElements = int64_t{1} << 21;
  const Tensor<S>& x = *in[0];
  const Tensor<S>& w = *in[1];
  const ops::ConvAttrs a = ops::conv_attrs(attrs);
  const int64_t sh = a.sh, sw = a.sw, dh = a.dh, dw = a.dw;
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const int64_t O = w.dim(0), Cg = w.dim(1), KH = w.dim(2), KW = w.dim(3);
  const int64_t groups = C / Cg, Og = O / groups;
  const ops::Window wy = ops::window_1d(H, ops::dilated_extent(KH, dh), sh, a.ph, "conv2d", {});
  const ops::Window wx = ops::window_1d(W, ops::dilated_extent(KW, dw), sw, a.pw, "conv2d", {});
  const int64_t OH = wy.out, OW = wx.out, OHW = OH * OW, K = Cg * KH * KW;
  const bool direct = KH == 1 && KW == 1 && sh == 1 && sw == 1 && wy.pad_before == 0 && wx.pad_before == 0 &&
                      OH == H && OW == W;
  const int64_t band = direct ? OH : std::clamp<int64_t>(kColumnElements / (K * OW), 1, OH);  // output rows
  std::vector<S> out(static_cast<size_t>(num_elements(out_shape)));
  std::vector<S> cols(direct ? 0 : static_cast<size_t>(K * band * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const S* image = x.data.data() + (n * C + g * Cg) * H * W;
      S* result = out.data() + (n * O + g * Og) * OHW;
      for (int64_t oy0 = 0; oy0 < OH; oy0 += band) {
        const int64_t rows = std::min(band, OH - oy0), cells = rows * OW;
        if (!direct) {
          // cols[(c*KH + ky)*KW + kx][(oy - oy0)*OW + ox] = x[n, g*Cg + c, oy*sh - pad + ky*dh, ox*sw - pad + kx*dw],
          // 0 outside the image.
          S* col = cols.data();
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx)
                for (int64_t oy = oy0; oy < oy0 + rows; ++oy) {
                  const int64_t iy = oy * sh - wy.pad_before + ky * dh;
                  if (iy < 0 || iy >= H) {
                    std::fill(col, col + OW, S(0));
                    col += OW;
                    continue;
                  }
                  const S* row = image + (c * H + iy) * W;
                  for (int64_t ox = 0; ox < OW; ++ox) {
                    const int64_t ix = ox * sw - wx.pad_before + kx * dw;
                    *col++ = ix < 0 || ix >= W ? S(0) : row[ix];
                  }
                }
        }
        // result[o][oy0*OW ...] for this band: rows of length `cells` inside rows of length OHW.
        gemm(Og, cells, K, w.data.data() + g * Og * K, K, direct ? image : cols.data(), direct ? OHW : cells,
             result + oy0 * OW, OHW);
      }
    }
  activate_all(a.act, out);
  return Tensor<S>(out_shape, std::move(out));
}

/// matmul as ops::eval_matmul defines it (numpy broadcasting of the batch dimensions): one matrix product
/// per batch index, or a single one when b has no batch of its own and a's batches are contiguous rows.
template <class S>
Tensor<S> matmul(AttrSpan attrs, ops::Args<S> in, const Shape& out_shape) {
  const Tensor<S>& a = *in[0];
  const Tensor<S>& b = *in[1];
  const int64_t m = a.shape[a.rank() - 2], k = a.shape[a.rank() - 1], n = b.shape[b.rank() - 1];
  const size_t batch_rank = out_shape.size() - 2;
  const Shape batch_shape(out_shape.begin(), out_shape.begin() + static_cast<std::ptrdiff_t>(batch_rank));
  const int64_t batches = num_elements(batch_shape);
  std::vector<S> out(static_cast<size_t>(num_elements(out_shape)));
  // Offset of an operand's matrix for a batch index (its batch dims may be fewer or broadcast), as in
  // ops::eval_matmul.
  auto matrix_offset = [&](const Tensor<S>& t, const std::vector<int64_t>& bidx) {
    const size_t t_batch = t.rank() - 2, lead = batch_rank - t_batch;
    int64_t off = 0, stride = t.shape[t.rank() - 2] * t.shape[t.rank() - 1];
    for (size_t d = t_batch; d-- > 0;) {
      off += (t.shape[d] == 1 ? 0 : bidx[d + lead]) * stride;
      stride *= t.shape[d];
    }
    return off;
  };
  const bool b_shared = num_elements(std::span(b.shape).first(b.rank() - 2)) == 1;
  const bool a_full = a.size() == batches * m * k;
  if (b_shared && a_full) {
    gemm(batches * m, n, k, a.data.data(), k, b.data.data(), n, out.data(), n);
  } else {
    std::vector<int64_t> bidx;
    for (int64_t batch = 0; batch < batches; ++batch) {
      unravel(batch, batch_shape, bidx);
      gemm(m, n, k, a.data.data() + matrix_offset(a, bidx), k, b.data.data() + matrix_offset(b, bidx), n,
           out.data() + batch * m * n, n);
    }
  }
  activate_all(ops::matmul_activation(attrs), out);
  return Tensor<S>(out_shape, std::move(out));
}

/// broadcast as ops::eval_broadcast defines it (numpy rules: x's dims right-aligned, a dim of 1 repeats),
/// copied a row at a time instead of unravelling every element's index.
template <class S>
Tensor<S> broadcast(ops::Args<S> in, const Shape& out_shape) {
  const Tensor<S>& x = *in[0];
  const size_t rank = out_shape.size();
  if (rank == 0) return x;
  // Source stride of each output dimension: 0 where x repeats (a dim of 1, or a missing leading dim).
  std::vector<int64_t> stride(rank, 0);
  const std::vector<int64_t> x_strides = strides_of(x.shape);
  for (size_t d = 0; d < x.rank(); ++d)
    if (x.shape[d] != 1) stride[d + rank - x.rank()] = x_strides[d];
  const int64_t row = out_shape[rank - 1], rows = num_elements(out_shape) / row;
  std::vector<S> out;
  out.reserve(static_cast<size_t>(num_elements(out_shape)));
  std::vector<int64_t> idx(rank, 0);  // index of the current row's first element
  int64_t src = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (stride[rank - 1] == 1)
      out.insert(out.end(), x.data.begin() + src, x.data.begin() + src + row);
    else
      out.insert(out.end(), static_cast<size_t>(row), x.data[static_cast<size_t>(src)]);
    for (size_t d = rank - 1; d-- > 0;) {  // next row: odometer over the outer dimensions
      src += stride[d];
      if (++idx[d] < out_shape[d]) break;
      src -= stride[d] * idx[d];
      idx[d] = 0;
    }
  }
  return Tensor<S>(out_shape, std::move(out));
}

/// Whether BLAS's 32-bit integers hold every matrix dimension and leading dimension of this operator: each
/// is at most the largest operand or result size.
template <class S>
bool fits_blas(ops::Args<S> args, const Shape& out_shape) {
  int64_t largest = num_elements(out_shape);
  for (const Tensor<S>* t : args) largest = std::max(largest, t->size());
  return largest <= std::numeric_limits<blasint>::max();
}

/// The operators with a faster kernel than their definition, one specialization each: `run` returns the value,
/// or nullopt to leave it to the definition (ops::Semantics<K>::eval). Every other operator has none.
template <OpKind K>
struct FastKernel {};
/// conv2d and matmul on BLAS, when its 32-bit integers hold every dimension.
template <OpKind K>
struct BlasKernel {
  template <class S>
  static std::optional<Tensor<S>> run(AttrSpan attrs, ops::Args<S> args, const Shape& out_shape) {
    if (!fits_blas(args, out_shape)) return std::nullopt;
    if constexpr (K == OpKind::Conv2d) return conv2d(attrs, args, out_shape);
    else return matmul(attrs, args, out_shape);
  }
};
template <> struct FastKernel<OpKind::Conv2d> : BlasKernel<OpKind::Conv2d> {};
template <> struct FastKernel<OpKind::Matmul> : BlasKernel<OpKind::Matmul> {};
template <>
struct FastKernel<OpKind::Broadcast> {
  template <class S>
  static std::optional<Tensor<S>> run(AttrSpan, ops::Args<S> args, const Shape& out_shape) {
    return broadcast(args, out_shape);
  }
};

template <class S, OpKind K>
Tensor<S> evaluate_one(AttrSpan attrs, ops::Args<S> args, const Shape& out_shape) {
  if constexpr (requires { FastKernel<K>::template run<S>(attrs, args, out_shape); })
    if (std::optional<Tensor<S>> value = FastKernel<K>::template run<S>(attrs, args, out_shape)) return std::move(*value);
  return ops::Semantics<K>::eval(Arith<S>{}, attrs, args, out_shape);
}

}  // namespace

template <class S>
Tensor<S> evaluate_op_fast(OpKind op, AttrSpan attrs, ops::Args<S> args, const Shape& out_shape) {
  // One entry per line of op_list.inc: the operator's fast kernel where it has one, else its definition.
  using Evaluate = Tensor<S> (*)(AttrSpan, ops::Args<S>, const Shape&);
  static constexpr Evaluate kByOperator[] = {
#define TEQ_OP(kind, ...) &evaluate_one<S, OpKind::kind>,
#include "rules/op_list.inc"
#undef TEQ_OP
  };
  return kByOperator[static_cast<size_t>(op)](attrs, args, out_shape);
}

template <class S>
std::vector<Tensor<S>> evaluate_fast(const Expr& expr, const std::map<std::string, const Tensor<S>*>& leaves,
                                     const FastEvalOptions& options) {
  VarShapes var_shapes;
  for (const auto& [name, t] : leaves) var_shapes.emplace(name, t->shape);
  if (options.lazy_leaf_shape)
    for (const ExprNode& n : expr.nodes())
      if (is_leaf(n.op) && !leaves.count(n.name))
        if (const Shape* s = options.lazy_leaf_shape(n.name)) var_shapes.emplace(n.name, *s);
  const std::vector<Shape> shapes = infer_shapes(expr, var_shapes);
  const std::vector<ExprNode>& nodes = expr.nodes();
  // Only nodes the roots reach are computed; each value is dropped after the last node that reads it.
  std::vector<bool> needed(expr.size(), false), is_root(expr.size(), false);
  for (ExprId r : expr.roots()) needed[r.value] = is_root[r.value] = true;
  std::vector<size_t> last_use(expr.size(), 0);
  size_t total = 0;
  for (size_t i = expr.size(); i-- > 0;) {
    if (!needed[i]) continue;
    if (!is_leaf(nodes[i].op)) ++total;
    for (ExprId c : nodes[i].children) {
      needed[c.value] = true;
      last_use[c.value] = std::max(last_use[c.value], i);
    }
  }
  std::vector<std::optional<Tensor<S>>> owned(expr.size());
  std::vector<const Tensor<S>*> value(expr.size(), nullptr);
  size_t done = 0;
  std::vector<const Tensor<S>*> args;
  for (size_t i = 0; i < expr.size(); ++i) {
    if (!needed[i]) continue;
    const ExprNode& n = nodes[i];
    if (is_leaf(n.op)) {
      auto it = leaves.find(n.name);
      if constexpr (std::is_same_v<S, double>) {
        if (it == leaves.end() && options.lazy_leaf && options.lazy_leaf_shape && options.lazy_leaf_shape(n.name)) {
          owned[i] = options.lazy_leaf(n.name);
          if (owned[i]->shape != shapes[i])
            throw ShapeError("evaluate: value for '" + n.name + "' has shape " + to_string(owned[i]->shape) +
                             ", expected " + to_string(shapes[i]));
          value[i] = &*owned[i];
          continue;
        }
      }
      if (it == leaves.end()) throw ShapeError("evaluate: no value for leaf '" + n.name + "'");
      if (it->second->shape != shapes[i])
        throw ShapeError("evaluate: value for '" + n.name + "' has shape " + to_string(it->second->shape) +
                         ", expected " + to_string(shapes[i]));
      value[i] = it->second;
      continue;
    }
    args.clear();
    for (ExprId c : n.children) args.push_back(value[c.value]);
    if constexpr (std::is_same_v<S, double>) {
      if (n.op == OpKind::Opaque && options.opaque)
        owned[i] = options.opaque(i, args, shapes[i]);
      else
        owned[i] = evaluate_op_fast<S>(n.op, n.attrs, args, shapes[i]);
    } else {
      owned[i] = evaluate_op_fast<S>(n.op, n.attrs, args, shapes[i]);
    }
    value[i] = &*owned[i];
    for (ExprId c : n.children)
      if (last_use[c.value] == i && !is_root[c.value] && owned[c.value]) {
        owned[c.value].reset();
        value[c.value] = nullptr;
      }
    if (options.on_progress) options.on_progress(++done, total);
  }
  std::vector<Tensor<S>> out;
  for (ExprId r : expr.roots()) out.push_back(*value[r.value]);
  return out;
}

template Tensor<float> evaluate_op_fast<float>(OpKind, AttrSpan, ops::Args<float>, const Shape&);
template Tensor<double> evaluate_op_fast<double>(OpKind, AttrSpan, ops::Args<double>, const Shape&);
template std::vector<Tensor<float>> evaluate_fast<float>(const Expr&, const std::map<std::string, const Tensor<float>*>&,
                                                         const FastEvalOptions&);
template std::vector<Tensor<double>> evaluate_fast<double>(const Expr&,
                                                           const std::map<std::string, const Tensor<double>*>&,
                                                           const FastEvalOptions&);

}  // namespace teq::onnx_io
