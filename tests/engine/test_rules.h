// A small, sound rule corpus written inline for the saturation-engine tests (the generated corpus in
// corpus/ is tested by its own suite). Each rule is a textbook identity over the vocabulary; rules that
// only hold for some shapes rely on the engine's right-side shape check.
#pragma once

#include <string>
#include <vector>

#include "rules/corpus.h"

namespace teq::test {

inline RuleCorpus engine_test_rules(bool with_multi = true) {
  RuleCorpus c;
  auto both = [&](const std::string& id, const std::string& a, const std::string& b) {
    c.rules.push_back(make_rule(id, {a}, {b}));
    c.rules.push_back(make_rule(id + "-rev", {b}, {a}));
  };
  auto one = [&](const std::string& id, const std::string& a, const std::string& b) {
    c.rules.push_back(make_rule(id, {a}, {b}));
  };
  both("matmul-assoc", "(matmul 0 ?a (matmul 0 ?b ?c))", "(matmul 0 (matmul 0 ?a ?b) ?c)");
  one("ewadd-comm", "(ewadd ?a ?b)", "(ewadd ?b ?a)");
  one("ewmul-comm", "(ewmul ?a ?b)", "(ewmul ?b ?a)");
  both("ewadd-assoc", "(ewadd ?a (ewadd ?b ?c))", "(ewadd (ewadd ?a ?b) ?c)");
  both("matmul-distrib-left", "(matmul 0 ?a (ewadd ?b ?c))", "(ewadd (matmul 0 ?a ?b) (matmul 0 ?a ?c))");
  both("matmul-distrib-right", "(matmul 0 (ewadd ?a ?b) ?c)", "(ewadd (matmul 0 ?a ?c) (matmul 0 ?b ?c))");
  both("ewmul-distrib", "(ewmul ?a (ewadd ?b ?c))", "(ewadd (ewmul ?a ?b) (ewmul ?a ?c))");
  both("smul-distrib", "(smul (ewadd ?a ?b) ?s)", "(ewadd (smul ?a ?s) (smul ?b ?s))");
  both("smul-matmul", "(matmul 0 (smul ?a ?s) ?b)", "(smul (matmul 0 ?a ?b) ?s)");
  one("relu-idem", "(relu (relu ?x))", "(relu ?x)");
  both("matmul-relu-fuse", "(relu (matmul 0 ?a ?b))", "(matmul 2 ?a ?b)");
  both("conv-relu-fuse", "(relu (conv2d 1 1 -1 -1 0 ?x ?w))", "(conv2d 1 1 -1 -1 2 ?x ?w)");
  both("conv-relu-fuse-valid", "(relu (conv2d 1 1 0 0 0 ?x ?w))", "(conv2d 1 1 0 0 2 ?x ?w)");
  both("conv-kernel-add", "(ewadd (conv2d 1 1 -1 -1 0 ?x ?w1) (conv2d 1 1 -1 -1 0 ?x ?w2))",
       "(conv2d 1 1 -1 -1 0 ?x (ewadd ?w1 ?w2))");
  for (int axis : {0, 1}) {
    std::string a = std::to_string(axis);
    one("split-concat-0-ax" + a, "(split " + a + " 0 " + a + " (concat " + a + " ?a ?b) ?a)", "?a");
    one("split-concat-1-ax" + a, "(split " + a + " 1 " + a + " (concat " + a + " ?a ?b) ?a)", "?b");
    both("concat-relu-ax" + a, "(concat " + a + " (relu ?a) (relu ?b))", "(relu (concat " + a + " ?a ?b))");
    both("concat-ewadd-ax" + a, "(concat " + a + " (ewadd ?a ?b) (ewadd ?c ?d))",
         "(ewadd (concat " + a + " ?a ?c) (concat " + a + " ?b ?d))");
  }
  both("concat-matmul", "(concat -1 (matmul 0 ?x ?w1) (matmul 0 ?x ?w2))", "(matmul 0 ?x (concat -1 ?w1 ?w2))");
  one("transpose-transpose", "(transpose 1 0 (transpose 1 0 ?x))", "?x");
  both("transpose-matmul", "(transpose 1 0 (matmul 0 ?a ?b))", "(matmul 0 (transpose 1 0 ?b) (transpose 1 0 ?a))");
  both("relu-maxpool", "(relu (maxpool 2 2 2 2 0 0 ?x))", "(maxpool 2 2 2 2 0 0 (relu ?x))");
  both("smul-smul", "(smul (smul ?x ?s) ?t)", "(smul ?x (ewmul ?s ?t))");
  if (with_multi) {
    c.rules.push_back(make_rule("matmul-share-input", {"(matmul 0 ?x ?w1)", "(matmul 0 ?x ?w2)"},
                                {"(split -1 0 -1 (matmul 0 ?x (concat -1 ?w1 ?w2)) ?w1)",
                                 "(split -1 1 -1 (matmul 0 ?x (concat -1 ?w1 ?w2)) ?w1)"}));
    // Sound for ungrouped convolutions only (the test graphs use groups = 1).
    c.rules.push_back(make_rule("conv-share-input", {"(conv2d 1 1 -1 -1 0 ?x ?w1)", "(conv2d 1 1 -1 -1 0 ?x ?w2)"},
                                {"(split 1 0 0 (conv2d 1 1 -1 -1 0 ?x (concat 0 ?w1 ?w2)) ?w1)",
                                 "(split 1 1 0 (conv2d 1 1 -1 -1 0 ?x (concat 0 ?w1 ?w2)) ?w1)"}));
  }
  return c;
}

}  // namespace teq::test
