// Fuzzes the s-expression parser, the printer round trip and shape inference on whatever parses.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "rules/evaluator.h"
#include "rules/sexpr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  teq::Expr expr;
  try {
    expr = teq::parse_expr(text);
  } catch (const teq::ParseError&) {
    return 0;
  }
  // What parses must print and re-parse to the same text.
  std::string printed = teq::print_graph(expr);
  if (teq::print_graph(teq::parse_expr(printed)) != printed) std::abort();
  // Shape inference must either succeed or throw ShapeError, never crash. Skip giant tensors.
  for (const teq::ExprNode& n : expr.nodes())
    for (int64_t a : n.attrs)
      if (a > 64 || a < -64) return 0;
  try {
    teq::infer_shapes(expr, {});
  } catch (const teq::ShapeError&) {
  }
  return 0;
}
