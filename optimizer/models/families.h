// One builder per model family; builtin.cpp maps names to them. Private to optimizer/models/.
#pragma once

#include "rules/expr.h"

namespace teq::models {

Expr build_bert();
Expr build_nasrnn();
Expr build_nasneta();
Expr build_resnext50();
Expr build_resnet50();
Expr build_inceptionv3();
Expr build_vgg19();
Expr build_squeezenet();

}  // namespace teq::models
