// The inputs file: read, bound to the model's flat inputs by its call spec
// (inputs/call_spec.hpp), and checked against what the model takes.

#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include <c10/core/CPUAllocator.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/jit/serialization/unpickler.h>
#include <torch/torch.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "inputs/call_spec.hpp"
#include "inputs/tensor_file.hpp"
#include "torchside/internal.hpp"
#include "torchside/torchside.hpp"

namespace aoti_bisect::torchside {
namespace fs = std::filesystem;

namespace {

// The file's value as a tree for binding (inputs/call_spec.hpp); its
// tensors in file order go to `tensors`.
InputValue to_input_value(const c10::IValue& v, std::vector<at::Tensor>& tensors) {
  InputValue out;
  if (v.isTensor()) {
    out.kind = InputValue::Kind::tensor;
    out.tensor = static_cast<int>(tensors.size());
    tensors.push_back(v.toTensor());
  } else if (v.isTuple() || v.isList()) {
    out.kind = v.isTuple() ? InputValue::Kind::tuple : InputValue::Kind::list;
    if (v.isTuple()) {
      for (const auto& e : v.toTupleRef().elements()) {
        out.children.push_back(to_input_value(e, tensors));
      }
    } else {
      for (const auto& e : v.toListRef()) {
        out.children.push_back(to_input_value(e, tensors));
      }
    }
  } else if (v.isGenericDict()) {
    out.kind = InputValue::Kind::dict;
    for (const auto& kv : v.toGenericDict()) {
      const c10::IValue& key = kv.key();
      out.keys.push_back(key.isString() ? key.toStringRef()
                         : key.isInt()  ? std::to_string(key.toInt())
                                        : key.tagKind());
      out.children.push_back(to_input_value(kv.value(), tensors));
    }
  } else if (v.isNone()) {
    out.kind = InputValue::Kind::none;
  } else if (v.isInt() || v.isDouble() || v.isBool() || v.isString()) {
    // Python's names, and the value: "an int (3)".
    out.kind = InputValue::Kind::scalar;
    out.type = v.isInt()      ? "an int (" + std::to_string(v.toInt()) + ")"
               : v.isDouble() ? "a float (" + std::to_string(v.toDouble()) + ")"
               : v.isBool()   ? std::string("a bool (") + (v.toBool() ? "True" : "False") + ")"
                              : "a str";
  } else {
    out.kind = InputValue::Kind::other;
    out.type = v.tagKind();
  }
  return out;
}

// A value that is not a tensor where every input is one: named as the file
// holds it, at the position of the tensors before it.
void refuse_non_tensors(const InputValue& v, int& tensors_before, const std::string& what, bool none_too = false) {
  if (v.kind == InputValue::Kind::tensor) {
    ++tensors_before;
  } else if (none_too && v.kind == InputValue::Kind::none) {
    throw Error(ErrorKind::cannot_test, what + " holds None at position " + std::to_string(tensors_before) +
                                            "; save a tuple of tensors in input order with torch.save");
  } else if (v.kind == InputValue::Kind::scalar || v.kind == InputValue::Kind::other) {
    const std::string value = v.kind == InputValue::Kind::scalar ? v.type : "a value of type " + v.type;
    throw Error(ErrorKind::cannot_test, what + " holds " + value + " where the model takes a tensor (after " +
                                            std::to_string(tensors_before) +
                                            " tensors); the model's inputs are "
                                            "all tensors: save a tuple of tensors in input order with torch.save");
  }
  for (const auto& c : v.children) {
    refuse_non_tensors(c, tensors_before, what, none_too);
  }
}

// Any file of tensors users save (inputs/tensor_file.hpp): its pickle, made
// plain torch-free, read by LibTorch's unpickler, each storage read from
// where the file holds it. `notes` gets what was read as something else.
c10::IValue load_ivalue(const fs::path& path, const std::string& what, std::vector<std::string>* notes = nullptr,
                        TensorFileFormat* format = nullptr) {
  TensorFile file = read_tensor_file(path, what, open_zip_torch);
  if (format != nullptr) {
    *format = file.format;
  }
  TensorRecords records(path, file, what, open_zip_torch);
  size_t pos = 0;
  auto reader = [&](char* buf, size_t n) {
    size_t k = std::min(n, file.pickle.size() - pos);
    std::memcpy(buf, file.pickle.data() + pos, k);
    pos += k;
    return k;
  };
  auto read_record = [&](const std::string& key) {
    at::DataPtr data = c10::GetCPUAllocator()->allocate(records.size(key));
    records.read(key, static_cast<char*>(data.get()));
    return data;
  };
  if (notes != nullptr) {
    *notes = file.notes;
  }
  try {
    torch::jit::Unpickler unpickler(reader, nullptr, nullptr, read_record, std::nullopt);
    return unpickler.parse_ivalue();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    msg = msg.substr(0, msg.find('\n'));
    throw Error(ErrorKind::cannot_test, what + " '" + path.string() + "' cannot be loaded (" + msg +
                                            "); save plain tensors in a tuple or dict with torch.save");
  }
}

// `v` with its tensors, in file order (to_input_value's), replaced by
// `tensors`: the file's value with some of its tensors cut.
c10::IValue with_tensors(const c10::IValue& v, const std::vector<at::Tensor>& tensors, size_t& next) {
  if (v.isTensor()) {
    return tensors.at(next++);
  }
  if (v.isTuple()) {
    std::vector<c10::IValue> elements;
    for (const auto& e : v.toTupleRef().elements()) {
      elements.push_back(with_tensors(e, tensors, next));
    }
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  if (v.isList()) {
    c10::impl::GenericList out(v.toList().elementType());
    for (const auto& e : v.toListRef()) {
      out.push_back(with_tensors(e, tensors, next));
    }
    return out;
  }
  if (v.isGenericDict()) {
    const auto& dict = v.toGenericDict();
    c10::impl::GenericDict out(dict.keyType(), dict.valueType());
    for (const auto& kv : dict) {
      out.insert(kv.key(), with_tensors(kv.value(), tensors, next));
    }
    return out;
  }
  return v;
}

// Makes `cut` on the flat inputs (`inputs` in flat order, `in_file` in
// file order, `order` the binding between them); "" or why not.
std::string apply_cut(const InputCut& cut, std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& in_file,
                      const std::vector<int>& order) {
  auto input = [&](int k) -> at::Tensor* {
    return k < 0 || static_cast<size_t>(k) >= inputs.size() ? nullptr : &inputs[static_cast<size_t>(k)];
  };
  auto absent = [&](int k) {
    return "the cut names input " + std::to_string(k) + ", and the model takes " + std::to_string(inputs.size());
  };
  for (const auto& take : cut.takes) {
    at::Tensor rows = at::tensor(take.rows, at::TensorOptions().dtype(at::kLong));
    for (int k : take.inputs) {
      at::Tensor* t = input(k);
      if (t == nullptr) {
        return absent(k);
      }
      if (t->dim() <= take.dim) {
        return "input " + std::to_string(k) + " has no dimension " + std::to_string(take.dim) + " to take rows from";
      }
      for (int64_t r : take.rows) {
        if (r < 0 || r >= t->size(take.dim)) {
          return "row " + std::to_string(r) + " is outside dimension " + std::to_string(take.dim) + " of input " +
                 std::to_string(k) + " (" + std::to_string(t->size(take.dim)) + ")";
        }
      }
      *t = t->index_select(take.dim, rows.to(t->device())).contiguous();
    }
  }
  for (const auto& fill : cut.fills) {
    at::Tensor* t = input(fill.input);
    if (t == nullptr) {
      return absent(fill.input);
    }
    if (at::isFloatingType(t->scalar_type()) || at::isComplexType(t->scalar_type()) ||
        t->scalar_type() == at::kBool) {
      return "input " + std::to_string(fill.input) + " is " + dtype_name(t->scalar_type()) +
             ": only integer inputs are filled";
    }
    *t = at::full_like(*t, fill.value).contiguous();
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    in_file[static_cast<size_t>(order[k])] = inputs[k];
  }
  return "";
}

}  // namespace

// `v` in torch.save's zip format as torch::pickle_save writes it, without
// its type tags (torch.jit._pickle.restore_type_tag around a dict, which
// torch.load(weights_only=True) refuses): what Python's torch.save of the
// same tuple or dict holds.
std::string save_plain(const c10::IValue& v) {
  std::vector<char> pickle_data;
  torch::jit::Pickler pickler([&](const char* buf, size_t n) { pickle_data.insert(pickle_data.end(), buf, buf + n); },
                              nullptr, nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(v);
  pickler.stop();
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, size_t n) {
    out.append(static_cast<const char*>(bytes), n);
    return n;
  });
  torch::jit::writeArchiveAndTensors("data", pickle_data.data(), pickle_data.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();
  return out;
}

// Every tensor of a torch.save file in file order (a reference file).
std::vector<at::Tensor> load_tensors(const fs::path& path, const std::string& what) {
  std::vector<at::Tensor> out;
  InputValue v = to_input_value(load_ivalue(path, what), out);
  int before = 0;
  refuse_non_tensors(v, before, what + " '" + path.string() + "'", true);
  return out;
}

LoadedInputs Session::load_inputs(const fs::path& path, const ModelFacts& model, const SampleTake* take) {
  const std::string what = "inputs file '" + path.string() + "'";
  std::vector<at::Tensor> in_file;
  std::vector<std::string> notes;
  TensorFileFormat format = TensorFileFormat::torch_zip;
  const c10::IValue whole = load_ivalue(path, "inputs file", &notes, &format);
  InputValue value = to_input_value(whole, in_file);
  value.keys_are_positions = format == TensorFileFormat::safetensors && value.kind == InputValue::Kind::dict;
  std::optional<TreeSpec> spec = model.in_spec.empty() ? std::nullopt : parse_treespec(model.in_spec);
  if (!spec || !model.num_inputs || *model.num_inputs == spec->leaves()) {
    int before = 0;
    refuse_non_tensors(value, before, what);
  }
  LoadedInputs loaded;
  loaded.notes = std::move(notes);
  loaded.binding = bind_inputs(spec, value, model.num_inputs);
  if (!loaded.binding.error.empty()) {
    if (loaded.binding.error.rfind("the inputs file holds ", 0) == 0) {
      loaded.binding.error += inputs_taken_text(model);  // what to save instead
    }
    return loaded;
  }
  m_impl->inputs.clear();
  m_impl->names.clear();
  for (int i : loaded.binding.order) {
    m_impl->inputs.push_back(in_file[static_cast<size_t>(i)]);
  }
  if (take != nullptr && !take->cut.empty()) {
    std::string why = apply_cut(take->cut, m_impl->inputs, in_file, loaded.binding.order);
    if (!why.empty()) {
      loaded.binding.error = why;
      return loaded;
    }
    if (!take->save.empty()) {
      size_t next = 0;
      write_file_atomic(take->save, save_plain(with_tensors(whole, in_file, next)));
    }
  }
  for (size_t i = 0; i < m_impl->inputs.size(); ++i) {
    const auto& t = m_impl->inputs[i];
    TensorInfo info{"input" + std::to_string(i), dtype_name(t.scalar_type()), to_vec(t.sizes()),
                    to_vec(t.strides()),         tensor_device_str(t),        tensor_sha256(t)};
    info.storage_offset = t.storage_offset();
    if (loaded.binding.by_call_spec) {
      info.argument = loaded.binding.names[i];
    }
    m_impl->names.push_back(info.argument);
    loaded.infos.push_back(std::move(info));
  }
  return loaded;
}

namespace {

// "[2, 64]", "at least 2", "at most 64".
std::string range_text(const std::optional<int64_t>& lo, const std::optional<int64_t>& hi) {
  if (lo && hi) {
    return "[" + std::to_string(*lo) + ", " + std::to_string(*hi) + "]";
  }
  return lo ? "at least " + std::to_string(*lo) : "at most " + std::to_string(*hi);
}

// "[2, ?, 64]": sizes or strides as the wrapper's checks pin them, "?" for
// one they leave free.
std::string pinned_dims_text(const std::vector<std::optional<int64_t>>& dims) {
  std::ostringstream want;
  want << "[";
  for (size_t k = 0; k < dims.size(); ++k) {
    want << (k ? ", " : "") << (dims[k] ? std::to_string(*dims[k]) : std::string("?"));
  }
  want << "]";
  return want.str();
}

// Input `who`'s sizes against the shape the model takes: a dimension outside
// its compiled range goes to `outside`, the first size that differs to `problems`.
void check_input_shape(const std::string& who, const InputSpec& spec, const at::Tensor& t,
                       std::vector<std::string>& problems, std::vector<std::string>& outside) {
  if (static_cast<size_t>(t.dim()) != spec.shape.size()) {
    problems.push_back(who + ": " + std::to_string(t.dim()) + " dimensions, the model takes " +
                       std::to_string(spec.shape.size()));
    return;
  }
  for (size_t d = 0; d < spec.shape.size(); ++d) {
    int64_t got = t.size(static_cast<int64_t>(d));
    std::optional<int64_t> lo = d < spec.dim_min.size() ? spec.dim_min[d] : std::nullopt;
    std::optional<int64_t> hi = d < spec.dim_max.size() ? spec.dim_max[d] : std::nullopt;
    if ((lo && got < *lo) || (hi && got > *hi)) {
      outside.push_back(who + ": dimension " + std::to_string(d) + " is " + std::to_string(got) + ", outside " +
                        range_text(lo, hi) +
                        ", the range the package was compiled for (its wrapper's input "
                        "checks, which run only under AOTI_RUNTIME_CHECK_INPUTS=1)");
      continue;
    }
    if (spec.shape[d] && *spec.shape[d] != got) {
      std::ostringstream sizes;
      sizes << t.sizes();
      problems.push_back(who + ": shape " + sizes.str() + ", the model takes " + pinned_dims_text(spec.shape));
      break;
    }
  }
}

// Input `i`'s dtype and shape against what the model takes (its wrapper's
// `spec`).
void check_input_against_spec(size_t i, const InputSpec& spec, const at::Tensor& t, std::vector<std::string>& problems,
                              std::vector<std::string>& outside) {
  std::string who = "input " + std::to_string(i) + (spec.name.empty() ? "" : " (" + spec.name + ")");
  if (!spec.dtype.empty() && spec.dtype != dtype_name(t.scalar_type())) {
    problems.push_back(who + ": dtype " + dtype_name(t.scalar_type()) + ", the model takes " + spec.dtype);
  }
  if (!spec.shape.empty()) {
    check_input_shape(who, spec, t, problems, outside);
  }
}

// Moves the inputs to the device `device_key` names ("cpu" or "cuda"; any
// other leaves them), noting each in `moved`; false, with the reason in
// `problems`, when one cannot be moved.
bool move_inputs_to_device(std::vector<at::Tensor>& in, const std::string& device_key, std::vector<std::string>& moved,
                           std::vector<std::string>& problems) {
  at::Device target = device_key == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  if (device_key == "cpu" || device_key == "cuda") {
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].device() != target) {
        moved.push_back("input " + std::to_string(i) + " moved from " + tensor_device_str(in[i]) + " to " +
                        target.str());
        try {
          in[i] = in[i].to(target);
        } catch (const std::exception& e) {
          std::string msg = e.what();
          problems.push_back("input " + std::to_string(i) + " is on " + tensor_device_str(in[i]) +
                             " and cannot be moved to " + target.str() + ": " + msg.substr(0, msg.find('\n')));
          return false;
        }
      }
    }
  }
  return true;
}

// Whether `t` has the strides `st` pins, where it pins them.
bool input_strides_match(const std::vector<std::optional<int64_t>>& st, const at::Tensor& t) {
  bool same = true;
  for (size_t d = 0; d < st.size(); ++d) {
    // A dimension of size 0 or 1 is never stepped over: its stride does not matter.
    same = same && (t.size(static_cast<int64_t>(d)) <= 1 || !st[d] || *st[d] == t.stride(static_cast<int64_t>(d)));
  }
  return same;
}

// Input `who`, whose strides are not `st`: refused in `problems`, or with
// `contiguous_inputs` copied into that layout (contiguous where `st` leaves
// a stride free) and noted in `moved`.
void refuse_or_copy_layout(const std::string& who, const std::vector<std::optional<int64_t>>& st, at::Tensor& t,
                           bool contiguous_inputs, std::vector<std::string>& problems,
                           std::vector<std::string>& moved) {
  const std::string want = pinned_dims_text(st);
  std::ostringstream got;
  got << t.strides();
  if (!contiguous_inputs) {
    problems.push_back(who + ": strides " + got.str() + ", the package was compiled for strides " + want + " (shape " +
                       [&] {
                         std::ostringstream o;
                         o << t.sizes();
                         return o.str();
                       }() +
                       "); the model would read its elements in the wrong order. Save the tensor with "
                       ".contiguous(), or pass --contiguous-inputs to run the package on a copy in its layout");
    return;
  }
  bool pinned = true;
  for (const auto& s : st) {
    pinned = pinned && s.has_value();
  }
  if (pinned) {
    std::vector<int64_t> strides;
    for (const auto& s : st) {
      strides.push_back(*s);
    }
    at::Tensor copy = at::empty_strided(t.sizes(), strides, t.options());
    copy.copy_(t);
    t = copy;
  } else {
    t = t.contiguous();
  }
  moved.push_back(who + " copied from strides " + got.str() + " into the package's layout " + want +
                  " (--contiguous-inputs): the runs are not what a program passing the saved tensor gets");
}

// Strides: the model's generated checks pin them, and the model reads its
// inputs by them without looking (unless AOTI_RUNTIME_CHECK_INPUTS is set
// where it runs). A layout it was not compiled for is what the user's
// program passes too: refused, naming both, unless `contiguous_inputs`
// (then copied into the layout the model expects, and noted).
void check_input_layouts(const ModelFacts& wrapper, std::vector<at::Tensor>& in, const std::vector<std::string>& names,
                         bool contiguous_inputs, std::vector<std::string>& problems, std::vector<std::string>& moved) {
  for (size_t i = 0; i < in.size() && i < wrapper.inputs.size(); ++i) {
    const auto& st = wrapper.inputs[i].strides;
    if (st.empty() || static_cast<size_t>(in[i].dim()) != st.size()) {
      continue;
    }
    if (input_strides_match(st, in[i])) {
      continue;
    }
    std::string who = "input " + std::to_string(i) + " (" +
                      (i < names.size() && !names[i].empty() ? names[i] + ", " : "") + wrapper.inputs[i].name + ")";
    refuse_or_copy_layout(who, st, in[i], contiguous_inputs, problems, moved);
  }
}

}  // namespace

std::vector<std::string> Session::check_inputs(const ModelFacts& wrapper, const std::string& device_key,
                                               bool contiguous_inputs, std::vector<std::string>& moved,
                                               std::vector<std::string>& outside) {
  std::vector<std::string> problems;
  auto& in = m_impl->inputs;
  if (wrapper.num_inputs && static_cast<size_t>(*wrapper.num_inputs) != in.size()) {
    problems.push_back("the inputs file holds " + std::to_string(in.size()) + " tensor" + (in.size() == 1 ? "" : "s") +
                       ", the model takes " + std::to_string(*wrapper.num_inputs) + inputs_taken_text(wrapper));
    return problems;
  }
  for (size_t i = 0; i < in.size() && i < wrapper.inputs.size(); ++i) {
    check_input_against_spec(i, wrapper.inputs[i], in[i], problems, outside);
  }
  if (!problems.empty()) {
    return problems;
  }
  if (!move_inputs_to_device(in, device_key, moved, problems)) {
    return problems;
  }
  check_input_layouts(wrapper, in, m_impl->names, contiguous_inputs, problems, moved);
  return problems;
}

}  // namespace aoti_bisect::torchside
