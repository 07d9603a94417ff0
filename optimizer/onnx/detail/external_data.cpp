#include "optimizer/onnx/detail/external_data.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <span>
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

class Loader {
 public:
  Loader(const fs::path& dir, const std::string& origin) : dir_(dir), origin_(origin) {}

  /// Where `t`'s bytes lie, validated: a relative location inside the model's folder, a readable file long
  /// enough for the tensor's shape and type.
  ExternalBytes locate(const onnx::TensorProto& t) const {
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
    return {file, begin, *expected};
  }

  void load(onnx::TensorProto& t) const {
    const ExternalBytes where = locate(t);
    std::string bytes;
    try {
      bytes = read_external_bytes(where);
    } catch (const OnnxError&) {
      fail(t, "cannot read its data from '" + where.file.string() + "'");
    }
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

/// Makes `t` refer to `length` bytes at `offset` of the file at `location` (its data no longer inline).
void point_to_file(onnx::TensorProto& t, const std::string& location, uint64_t offset, uint64_t length) {
  t.clear_external_data();
  t.clear_raw_data();
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", location},
                                   {"offset", std::to_string(offset)}, {"length", std::to_string(length)}}) {
    auto* kv = t.add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  }
  t.set_data_location(onnx::TensorProto::EXTERNAL);
}

/// Floating-point tensors are what a model's size is made of; the import reads none of their values but
/// the few it folds (those read them on request), so they stay in their file.
bool stays_in_file(const onnx::TensorProto& t) {
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::DOUBLE:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool load_external_data(onnx::ModelProto& model, const fs::path& dir, const std::string& origin,
                        ExternalLoad mode) {
  Loader loader(dir, origin);
  bool any = false;
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    any = true;
    if (mode == ExternalLoad::LeaveFloats && stays_in_file(t))
      (void)loader.locate(t);  // validated now, read when needed
    else
      loader.load(t);
  }
  for (auto& n : *model.mutable_graph()->mutable_node())
    if (n.op_type() == "Constant")
      for (auto& a : *n.mutable_attribute())
        if (a.has_t() && a.t().data_location() == onnx::TensorProto::EXTERNAL) {
          any = true;
          loader.load(*a.mutable_t());
        }
  return any;
}

ExternalBytes external_bytes(const onnx::TensorProto& t, const fs::path& dir, const std::string& origin) {
  return Loader(dir, origin).locate(t);
}

void load_tensor_data(onnx::TensorProto& t, const fs::path& dir, const std::string& origin) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) Loader(dir, origin).load(t);
}

onnx::TensorProto external_float_tensor(const std::string& name, const Shape& dims, const ExternalBytes& where,
                                        const fs::path& dir, int32_t type) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  point_to_file(t, where.file.lexically_relative(dir).generic_string(), where.offset, where.length);
  return t;
}

void read_external(const ExternalBytes& where, std::span<char> into) {
  std::ifstream f(where.file, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(where.offset));
  if (into.size() != where.length || !f || !f.read(into.data(), static_cast<std::streamsize>(into.size())))
    throw OnnxError("cannot read " + std::to_string(where.length) + " bytes at offset " +
                    std::to_string(where.offset) + " of '" + where.file.string() + "'");
}

std::string read_external_bytes(const ExternalBytes& where) {
  std::string bytes(static_cast<size_t>(where.length), '\0');
  read_external(where, bytes);
  return bytes;
}

namespace {

/// Appends `length` bytes of `from` at `offset` to `out`, a chunk at a time (never the whole tensor in memory).
void stream_copy(const ExternalBytes& from, std::ofstream& out, const fs::path& out_name) {
  std::ifstream in(from.file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(from.offset));
  if (!in) throw OnnxError("cannot read '" + from.file.string() + "' at offset " + std::to_string(from.offset));
  std::vector<char> chunk(std::min<uint64_t>(from.length, uint64_t{16} << 20));
  for (uint64_t left = from.length; left > 0;) {
    const auto n = static_cast<std::streamsize>(std::min<uint64_t>(left, chunk.size()));
    if (!in.read(chunk.data(), n)) throw OnnxError("cannot read '" + from.file.string() + "' (shorter than before?)");
    out.write(chunk.data(), n);
    if (!out) throw OnnxError(out_name.string() + ": write failed");
    left -= static_cast<uint64_t>(n);
  }
}

}  // namespace

size_t move_to_external_data(onnx::ModelProto& model, const fs::path& data_file, size_t threshold,
                             const fs::path& source_dir) {
  std::error_code ec;
  for (const auto& t : model.graph().initializer())  // before data_file is truncated
    if (t.data_location() == onnx::TensorProto::EXTERNAL &&
        fs::equivalent(external_bytes(t, source_dir, "the input model").file, data_file, ec))
      throw OnnxError(data_file.string() + ": is the input model's own data file; write the model elsewhere");
  size_t moved = 0;
  std::ofstream out;
  uint64_t offset = 0;
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    const bool in_source = t.data_location() == onnx::TensorProto::EXTERNAL;
    if (!in_source && (!t.has_raw_data() || t.raw_data().size() < threshold)) continue;
    if (!out.is_open()) {
      out.open(data_file, std::ios::binary | std::ios::trunc);
      if (!out) throw OnnxError(data_file.string() + ": cannot open for writing");
    }
    uint64_t length = 0;
    if (in_source) {
      // Still in the input's data file: copied over without being read into memory.
      const ExternalBytes from = external_bytes(t, source_dir, "the input model");
      stream_copy(from, out, data_file);
      length = from.length;
    } else {
      const std::string& raw = t.raw_data();
      out.write(raw.data(), static_cast<std::streamsize>(raw.size()));
      if (!out) throw OnnxError(data_file.string() + ": write failed");
      length = raw.size();
    }
    point_to_file(t, data_file.filename().string(), offset, length);
    offset += length;
    ++moved;
  }
  return moved;
}

}  // namespace teq::onnx_io::detail
