// S-expression syntax for graphs and patterns, parser and printer.
//
//   term   := ?name                      pattern variable
//           | (input NAME d0 d1 ...)     graph input of that shape   (weight NAME ...) likewise
//           | (OP int* term*)            operator: integer attributes first, then operands
//           | NAME                       a name bound by an earlier (let NAME term)
//   graph  := item*     item := (let NAME term) | term      every non-let item is an output
//
// NAME is a bare symbol or a "quoted string" (for ONNX names such as "onnx::Conv_3"); ';' starts a
// comment. Example: (let h (relu (matmul 0 (input x 2 4) (weight w 4 4)))) (ewadd h h)
// Parse errors throw ParseError with the line and column of the offending token.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "rules/expr.h"

namespace teq {

class ParseError : public std::runtime_error {
 public:
  ParseError(int line, int column, const std::string& what)
      : std::runtime_error("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what),
        line_(line),
        column_(column) {}
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_, column_;
};

/// Parses a graph or pattern text into an Expr whose roots are the outputs, in order.
Expr parse_expr(std::string_view text);
/// Parses text that must hold exactly one term (a pattern); the Expr has one root.
Expr parse_pattern(std::string_view text);

/// Prints one subterm as a tree (shared subterms repeated). For patterns and small graphs.
std::string to_sexpr(const Expr& expr, ExprId id);
/// Prints a whole graph: subterms used more than once are bound once with (let tN ...), then the roots,
/// one per line. parse_expr(print_graph(e)) == e up to node order.
std::string print_graph(const Expr& expr);

}  // namespace teq
