#include "optimizer/onnx/detail/external_data.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <vector>

#include "optimizer/onnx/model.h"
#include "rules/shape.h"

namespace teq::onnx_io::detail {

namespace fs = std::filesystem;

namespace {

/// Bytes of `n` elements of an ONNX data type; nullopt for strings and unknown types.
std::optional<uint64_t> data_bytes(int32_t type, uint64_t n) {
  switch (type) {
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::BOOL:
    case 17: case 18: case 19: case 20:  // float8 variants (opset 19)
      return n;
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return 2 * n;
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
      return 4 * n;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::COMPLEX64:
      return 8 * n;
    case onnx::TensorProto::COMPLEX128: return 16 * n;
    case 21: case 22: return (n + 1) / 2;  // uint4, int4 (opset 21), two to a byte
    default: return std::nullopt;
  }
}

/// Visits the tensors of the main graph that may hold external data: initializers and Constant values.
template <class F>
void for_each_tensor(onnx::ModelProto& model, F&& f) {
  onnx::GraphProto& g = *model.mutable_graph();
  for (auto& t : *g.mutable_initializer()) f(t);
  for (auto& n : *g.mutable_node())
    if (n.op_type() == "Constant")
      for (auto& a : *n.mutable_attribute())
        if (a.has_t()) f(*a.mutable_t());
}

class Loader {
 public:
  Loader(const fs::path& dir, const std::string& origin) : dir_(dir), origin_(origin) {}

  void load(onnx::TensorProto& t) {
    std::string location;
    std::optional<uint64_t> offset, length;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = number(t, kv.key(), kv.value());
      else if (kv.key() == "length") length = number(t, kv.key(), kv.value());
    }
    if (location.empty()) fail(t, "keeps its data in an external file but names none (no 'location')");
    if (dir_.empty())
      fail(t, "keeps its data in the external file '" + location +
                  "', which can be read only when the model is imported from its file");
    const fs::path rel = fs::path(location).lexically_normal();
    if (rel.is_absolute() || rel.empty() || *rel.begin() == "..")
      fail(t, "keeps its data in '" + location + "', outside the model's folder " + dir_.string() +
                  " (the location must be a relative path inside it)");
    const fs::path file = dir_ / rel;
    std::error_code ec;
    // A symbolic link may still lead out of the folder: compare the resolved paths.
    const fs::path real = fs::weakly_canonical(file, ec);
    fs::path base = fs::weakly_canonical(dir_, ec);
    if (base.filename().empty()) base = base.parent_path();  // "dir/" ends with an empty element
    auto [mismatch, _] = std::mismatch(base.begin(), base.end(), real.begin(), real.end());
    if (mismatch != base.end())
      fail(t, "keeps its data in '" + location + "', which resolves outside the model's folder " + dir_.string());
    if (!fs::is_regular_file(file, ec)) fail(t, "keeps its data in '" + file.string() + "', which is not a readable file");
    const uint64_t size = fs::file_size(file, ec);
    if (ec) fail(t, "keeps its data in '" + file.string() + "', which is not a readable file");
    const uint64_t begin = offset.value_or(0);
    for (int64_t d : t.dims())
      if (d < 0 || d > kMaxElements) fail(t, "has the dimension " + std::to_string(d) + ", which no tensor can have");
    const int64_t elements = num_elements(Shape(t.dims().begin(), t.dims().end()));
    if (elements < 0 || elements > kMaxElements) fail(t, "has more than 2^40 elements, the largest tensor tensor-eqsat handles");
    auto expected = data_bytes(t.data_type(), static_cast<uint64_t>(elements));
    if (!expected) fail(t, "has data type " + std::to_string(t.data_type()) + ", which cannot be kept externally");
    if (length && *length != *expected)
      fail(t, "has an external length of " + std::to_string(*length) + " bytes, but its shape needs " +
                  std::to_string(*expected));
    if (begin > size || size - begin < *expected)
      fail(t, "needs " + std::to_string(*expected) + " bytes at offset " + std::to_string(begin) + " of '" +
                  file.string() + "', which holds only " + std::to_string(size) + " bytes (too short)");
    std::ifstream f(file, std::ios::binary);
    std::string bytes(static_cast<size_t>(*expected), '\0');
    f.seekg(static_cast<std::streamoff>(begin));
    if (!f || !f.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
      fail(t, "cannot read its data from '" + file.string() + "'");
    t.set_raw_data(std::move(bytes));
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
  }

 private:
  [[noreturn]] void fail(const onnx::TensorProto& t, const std::string& what) const {
    throw OnnxError(origin_ + ": tensor '" + t.name() + "' " + what);
  }
  uint64_t number(const onnx::TensorProto& t, const std::string& key, const std::string& value) const {
    size_t used = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || value[0] == '-')
      fail(t, "has external data " + key + " '" + value + "', which is not a byte count");
    return v;
  }

  fs::path dir_;
  const std::string& origin_;
};

}  // namespace

bool load_external_data(onnx::ModelProto& model, const fs::path& dir, const std::string& origin) {
  Loader loader(dir, origin);
  bool any = false;
  for_each_tensor(model, [&](onnx::TensorProto& t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
    any = true;
    loader.load(t);
  });
  return any;
}

size_t move_to_external_data(onnx::ModelProto& model, const fs::path& data_file, size_t threshold) {
  size_t moved = 0;
  std::ofstream out;
  uint64_t offset = 0;
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (!t.has_raw_data() || t.raw_data().size() < threshold) continue;
    if (!out.is_open()) {
      out.open(data_file, std::ios::binary | std::ios::trunc);
      if (!out) throw OnnxError(data_file.string() + ": cannot open for writing");
    }
    const std::string& raw = t.raw_data();
    out.write(raw.data(), static_cast<std::streamsize>(raw.size()));
    if (!out) throw OnnxError(data_file.string() + ": write failed");
    t.clear_external_data();
    auto add = [&t](const std::string& key, const std::string& value) {
      auto* kv = t.add_external_data();
      kv->set_key(key);
      kv->set_value(value);
    };
    add("location", data_file.filename().string());
    add("offset", std::to_string(offset));
    add("length", std::to_string(raw.size()));
    offset += raw.size();
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    ++moved;
  }
  return moved;
}

}  // namespace teq::onnx_io::detail
