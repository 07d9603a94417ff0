#include "optimizer/onnx/detail/proto_util.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "optimizer/onnx/model.h"

namespace teq::onnx_io::detail {

namespace {
template <class T>
std::vector<T> from_raw(const onnx::TensorProto& t, size_t n) {
  const std::string& raw = t.raw_data();
  if (raw.size() != n * sizeof(T))
    throw OnnxError("tensor '" + t.name() + "': raw_data holds " + std::to_string(raw.size()) + " bytes, expected " +
                    std::to_string(n * sizeof(T)));
  std::vector<T> out(n);
  std::memcpy(out.data(), raw.data(), raw.size());  // ONNX raw data is little-endian, as is this host
  return out;
}

void check_internal(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    throw OnnxError("tensor '" + t.name() + "' keeps its data in an external file, which is not supported");
}
}  // namespace

Shape tensor_dims(const onnx::TensorProto& t) { return Shape(t.dims().begin(), t.dims().end()); }

bool is_term_float_type(int32_t type) { return is_float_term_type(type); }

int64_t float_type_bytes(int32_t type) {
  return type == onnx::TensorProto::FLOAT16 || type == onnx::TensorProto::BFLOAT16 ? 2 : 4;
}

namespace {
template <class Out>
void decode_16bit(const char* bytes, size_t count, bool half, Out* out) {
  if (half) {
    const float* table = half_to_float_table();
    for (size_t i = 0; i < count; ++i) {
      uint16_t h;
      std::memcpy(&h, bytes + 2 * i, 2);
      out[i] = static_cast<Out>(table[h]);
    }
  } else {
    for (size_t i = 0; i < count; ++i) {
      uint16_t h;
      std::memcpy(&h, bytes + 2 * i, 2);
      out[i] = static_cast<Out>(bfloat_to_float(h));
    }
  }
}
}  // namespace

std::string float_bytes(const std::vector<float>& values, int32_t type) {
  if (type == onnx::TensorProto::FLOAT)
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    bits[i] = type == onnx::TensorProto::FLOAT16 ? float_to_half(values[i]) : float_to_bfloat(values[i]);
  return std::string(reinterpret_cast<const char*>(bits.data()), bits.size() * sizeof(uint16_t));
}

void decode_float_bytes(const char* bytes, size_t size, int32_t type, float* out) {
  if (type == onnx::TensorProto::FLOAT) {
    std::memcpy(out, bytes, size);  // little-endian, as ONNX says and this host is
    return;
  }
  decode_16bit(bytes, size / 2, type == onnx::TensorProto::FLOAT16, out);
}

void decode_float_bytes(const char* bytes, size_t size, int32_t type, double* out) {
  if (type == onnx::TensorProto::FLOAT) {
    for (size_t i = 0; i < size / 4; ++i) {
      float f;
      std::memcpy(&f, bytes + 4 * i, 4);
      out[i] = f;
    }
    return;
  }
  decode_16bit(bytes, size / 2, type == onnx::TensorProto::FLOAT16, out);
}

std::vector<float> tensor_floats(const onnx::TensorProto& t) {
  check_internal(t);
  if (!is_term_float_type(t.data_type()))
    throw OnnxError("tensor '" + t.name() + "' is not FLOAT, FLOAT16 or BFLOAT16");
  size_t n = static_cast<size_t>(num_elements(tensor_dims(t)));
  if (t.data_type() != onnx::TensorProto::FLOAT) {
    std::vector<float> out(n);
    if (t.has_raw_data()) {
      if (t.raw_data().size() != 2 * n)
        throw OnnxError("tensor '" + t.name() + "': raw_data holds " + std::to_string(t.raw_data().size()) +
                        " bytes, expected " + std::to_string(2 * n));
      decode_float_bytes(t.raw_data().data(), t.raw_data().size(), t.data_type(), out.data());
      return out;
    }
    if (static_cast<size_t>(t.int32_data_size()) != n)
      throw OnnxError("tensor '" + t.name() + "': holds " + std::to_string(t.int32_data_size()) + " values, expected " +
                      std::to_string(n));
    for (size_t i = 0; i < n; ++i) {
      const auto h = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
      out[i] = t.data_type() == onnx::TensorProto::FLOAT16 ? half_to_float(h) : bfloat_to_float(h);
    }
    return out;
  }
  if (t.has_raw_data()) return from_raw<float>(t, n);
  if (static_cast<size_t>(t.float_data_size()) != n)
    throw OnnxError("tensor '" + t.name() + "': holds " + std::to_string(t.float_data_size()) + " values, expected " +
                    std::to_string(n));
  return std::vector<float>(t.float_data().begin(), t.float_data().end());
}

std::vector<int64_t> tensor_ints(const onnx::TensorProto& t) {
  check_internal(t);
  size_t n = static_cast<size_t>(num_elements(tensor_dims(t)));
  if (t.data_type() == onnx::TensorProto::INT64) {
    if (t.has_raw_data()) return from_raw<int64_t>(t, n);
    return std::vector<int64_t>(t.int64_data().begin(), t.int64_data().end());
  }
  if (t.data_type() == onnx::TensorProto::INT32) {
    if (t.has_raw_data()) {
      auto v = from_raw<int32_t>(t, n);
      return std::vector<int64_t>(v.begin(), v.end());
    }
    return std::vector<int64_t>(t.int32_data().begin(), t.int32_data().end());
  }
  if (t.data_type() == onnx::TensorProto::BOOL) {  // one byte per element raw, else in int32_data
    if (t.has_raw_data()) {
      auto v = from_raw<uint8_t>(t, n);
      return std::vector<int64_t>(v.begin(), v.end());
    }
    return std::vector<int64_t>(t.int32_data().begin(), t.int32_data().end());
  }
  throw OnnxError("tensor '" + t.name() + "' is not an integer tensor");
}

std::optional<std::vector<double>> tensor_numbers(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      auto v = tensor_floats(t);
      return std::vector<double>(v.begin(), v.end());
    }
    case onnx::TensorProto::DOUBLE: {
      size_t n = static_cast<size_t>(num_elements(tensor_dims(t)));
      if (t.has_raw_data()) return from_raw<double>(t, n);
      return std::vector<double>(t.double_data().begin(), t.double_data().end());
    }
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT64: {
      auto v = tensor_ints(t);
      return std::vector<double>(v.begin(), v.end());
    }
    default: return std::nullopt;
  }
}

onnx::TensorProto make_float_tensor(const std::string& name, const Shape& dims, const std::vector<float>& values,
                                    int32_t type) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(float_bytes(values, type));
  return t;
}

onnx::TensorProto make_int_tensor(const std::string& name, const Shape& dims, const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const auto* a = find_attr(n, name);
  return a ? a->i() : fallback;
}

float attr_float(const onnx::NodeProto& n, const std::string& name, float fallback) {
  const auto* a = find_attr(n, name);
  return a ? a->f() : fallback;
}

std::string attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& fallback) {
  const auto* a = find_attr(n, name);
  return a ? a->s() : fallback;
}

std::optional<std::vector<int64_t>> attr_ints(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = find_attr(n, name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

onnx::AttributeProto* add_attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
  return a;
}

onnx::AttributeProto* add_attr(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
  return a;
}

onnx::AttributeProto* add_attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
  return a;
}

onnx::AttributeProto* add_attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
  return a;
}

int64_t default_opset(const onnx::ModelProto& m) {
  for (const auto& op : m.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") return op.version();
  return 0;
}

namespace {

void collect_outer(const onnx::GraphProto& g, std::set<std::string> defined, std::vector<std::string>& out,
                   std::set<std::string>& seen) {
  for (const auto& in : g.input()) defined.insert(in.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) read(in);
    for (const auto& a : n.attribute()) {
      std::vector<std::string> inner;
      std::set<std::string> inner_seen;
      if (a.has_g()) collect_outer(a.g(), defined, inner, inner_seen);
      for (const auto& sub : a.graphs()) collect_outer(sub, defined, inner, inner_seen);
      for (const auto& name : inner) read(name);
    }
    for (const auto& o : n.output()) defined.insert(o);
  }
  for (const auto& o : g.output()) read(o.name());
}

void rename_in(onnx::GraphProto& g, const std::string& from, const std::string& to) {
  for (auto& n : *g.mutable_node()) {
    for (auto& in : *n.mutable_input())
      if (in == from) in = to;
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) rename_in(*a.mutable_g(), from, to);
      for (auto& sub : *a.mutable_graphs()) rename_in(sub, from, to);
    }
  }
  for (auto& o : *g.mutable_output())
    if (o.name() == from) o.set_name(to);
}

}  // namespace

std::vector<std::string> outer_references(const onnx::NodeProto& node) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& a : node.attribute()) {
    if (a.has_g()) collect_outer(a.g(), {}, out, seen);
    for (const auto& sub : a.graphs()) collect_outer(sub, {}, out, seen);
  }
  return out;
}

void rename_outer_reference(onnx::NodeProto& node, const std::string& from, const std::string& to) {
  for (auto& a : *node.mutable_attribute()) {
    if (a.has_g()) rename_in(*a.mutable_g(), from, to);
    for (auto& sub : *a.mutable_graphs()) rename_in(sub, from, to);
  }
}

}  // namespace teq::onnx_io::detail
