#include "optimizer/models/builtin.h"

#include <stdexcept>

#include "optimizer/models/families.h"

namespace teq {
namespace {

struct Entry {
  std::string_view name;
  Expr (*build)();
};

// Tensat's table order, then ResNet-50 (TASO's extra model).
constexpr Entry kModels[] = {
    {"bert", models::build_bert},
    {"nasrnn", models::build_nasrnn},
    {"nasneta", models::build_nasneta},
    {"resnext50", models::build_resnext50},
    {"resnet50", models::build_resnet50},
    {"inceptionv3", models::build_inceptionv3},
    {"vgg19", models::build_vgg19},
    {"squeezenet", models::build_squeezenet},
};

}  // namespace

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const Entry& e : kModels) names.emplace_back(e.name);
  return names;
}

Expr build_builtin_model(std::string_view name) {
  for (const Entry& e : kModels)
    if (e.name == name) return e.build();
  std::string valid;
  for (const Entry& e : kModels) valid += (valid.empty() ? "" : ", ") + std::string(e.name);
  throw std::invalid_argument("unknown built-in model '" + std::string(name) + "'; valid names: " + valid);
}

}  // namespace teq
