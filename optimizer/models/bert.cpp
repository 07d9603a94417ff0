// BERT as TASO and Tensat benchmark it: 8 self-attention layers, sequence 64, hidden 1024, 16 heads of
// 64, batch 1. Unlike TASO's example (whose keys are not transposed and whose output projection reads
// the layer input), each layer computes real attention: softmax(Q K^T) V, then the output projection of
// the attention result feeds the next layer. The 1/sqrt(d) scale is folded into the query weights.
#include "optimizer/models/families.h"
#include "optimizer/models/graph_builder.h"

namespace teq::models {

Expr build_bert() {
  constexpr int64_t kSeq = 64, kHidden = 1024, kHeads = 16, kHeadDim = kHidden / kHeads, kLayers = 8;
  GraphBuilder g;
  ExprId x = g.input("input", {kSeq, kHidden});
  for (int layer = 0; layer < kLayers; ++layer) {
    auto project = [&](const char* w) { return g.matmul(x, g.weight(w, {kHidden, kHidden})); };
    // [seq, hidden] -> [seq, heads, head_dim] -> heads first, so one batched matmul covers all heads.
    auto split_heads = [&](ExprId t, std::vector<int64_t> perm) {
      return g.transpose(g.reshape(t, {kSeq, kHeads, kHeadDim}), std::move(perm));
    };
    ExprId q = split_heads(project("wq"), {1, 0, 2});    // [heads, seq, head_dim]
    ExprId kt = split_heads(project("wk"), {1, 2, 0});   // [heads, head_dim, seq]
    ExprId v = split_heads(project("wv"), {1, 0, 2});    // [heads, seq, head_dim]
    ExprId probs = g.softmax(g.matmul(q, kt), -1);       // [heads, seq, seq]
    ExprId attn = g.matmul(probs, v);                    // [heads, seq, head_dim]
    ExprId merged = g.reshape(g.transpose(attn, {1, 0, 2}), {kSeq, kHidden});
    x = g.matmul(merged, g.weight("wo", {kHidden, kHidden}));
  }
  return std::move(g).finish({x});
}

}  // namespace teq::models
