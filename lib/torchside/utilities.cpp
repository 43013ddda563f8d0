// The runner's utilities that load no model: inputs files cut from others
// (--make-inputs), and how far two outputs files are apart (--compare-outputs).
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <fstream>
#include <iterator>

#include <torch/torch.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "inputs/call_spec.hpp"
#include "protocol/input_cut.hpp"
#include "protocol/runner.hpp"
#include "protocol/values.hpp"
#include "torchside/internal.hpp"
#include "torchside/runner.hpp"
#include "torchside/torchside.hpp"

namespace aoti_bisect::torchside {
namespace fs = std::filesystem;

namespace {

nlohmann::json read_request(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return nlohmann::json::parse(text);
}

// Runs `body` on the request; a request that cannot be read is the driver's bug.
template <class F>
int serve_request(const char* flag, const std::string& path, F body) {
  try {
    body(read_request(path));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aoti-bisect-runner: error: %s %s: %s\n", flag, path.c_str(), e.what());
    return static_cast<int>(RunnerExit::internal);
  }
}

// The reference cut as the inputs were: only rows of the batch (one take
// of dimension 0), and only where every output has the batch there.
void cut_reference(const MakeInputsRequest::Case& c, MadeInputs& made) {
  if (c.cut.empty() || c.cut.takes.size() != 1 || c.cut.takes[0].dim != 0 || !c.cut.fills.empty() ||
      c.cut.takes[0].inputs.empty()) {
    made.reference_note = c.cut.empty() ? "" : "the reference cannot follow a cut that is not of the batch's rows";
    if (c.cut.empty()) {
      fs::copy_file(c.reference, c.reference_out, fs::copy_options::overwrite_existing);
      made.reference_made = true;
    }
    return;
  }
  const auto& rows = c.cut.takes[0].rows;
  const int64_t batch = *std::max_element(rows.begin(), rows.end()) + 1;
  std::vector<at::Tensor> ref = load_tensors(c.reference, "reference file");
  for (size_t i = 0; i < ref.size(); ++i) {
    if (ref[i].dim() < 1 || ref[i].size(0) < batch) {
      made.reference_note = "the reference's output " + std::to_string(i) + " has no dimension 0 of the batch";
      return;
    }
  }
  save_reference_rows(c.reference, rows, c.reference_out);
  made.reference_made = true;
}

MadeInputs make_one(const MakeInputsRequest::Case& c, const ModelFacts& facts) {
  MadeInputs made;
  made.name = c.name;
  try {
    Session session;
    SampleTake take{c.cut, c.out};
    LoadedInputs loaded = session.load_inputs(c.base, facts, &take);
    if (!loaded.binding.error.empty()) {
      made.error = loaded.binding.error;
      return made;
    }
    if (c.cut.empty()) {  // the base as it is, copied in its own form
      fs::copy_file(c.base, c.out, fs::copy_options::overwrite_existing);
    }
    for (const auto& info : loaded.infos) {
      made.shapes.push_back(info.shape);
    }
    if (!c.reference.empty()) {
      cut_reference(c, made);
    }
  } catch (const std::exception& e) {
    std::string msg = e.what();
    made.error = msg.substr(0, msg.find('\n'));
  }
  return made;
}

OutputsApart compare_pair(const CompareOutputsRequest::Pair& p, const ToleranceTable& tolerances) {
  OutputsApart a;
  a.name = p.name;
  try {
    std::vector<at::Tensor> actual = load_tensors(p.actual, "outputs file");
    std::vector<at::Tensor> expected = load_tensors(p.expected, "outputs file");
    double worst = -1;
    for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
      if (actual[i].sizes() != expected[i].sizes() || actual[i].scalar_type() != expected[i].scalar_type() ||
          actual[i].numel() == 0) {
        continue;
      }
      // Only where both are finite: NaN/Inf on either side are the runs'
      // own findings, not a change of value.
      at::Tensor both = actual[i].isfinite().logical_and(expected[i].isfinite()).reshape({-1});
      at::Tensor x = actual[i].reshape({-1}).index({both});
      at::Tensor y = expected[i].reshape({-1}).index({both});
      ++a.compared;
      if (x.numel() == 0) {
        continue;
      }
      Tolerance tol = tolerances.for_dtype(dtype_name(actual[i].scalar_type()));
      ValueDiff d = diff_values(x, y, &tol);
      a.elements += x.numel();
      a.beyond += d.outside;
      const double rel = d.scale > 0 ? d.max_abs / d.scale : 0.0;
      if (d.max_abs > a.max_abs) {
        a.max_abs = d.max_abs;
      }
      if (rel > worst) {
        worst = rel;
        a.max_rel = rel;
        a.worst_output = "output" + std::to_string(i);
      }
    }
  } catch (const std::exception& e) {
    std::string msg = e.what();
    a.error = msg.substr(0, msg.find('\n'));
  }
  return a;
}

at::ScalarType scalar_type_named(const std::string& name) {
  static const std::map<std::string, at::ScalarType> k = {
      {"uint8", at::kByte},   {"int8", at::kChar},     {"int16", at::kShort},   {"int32", at::kInt},
      {"int64", at::kLong},   {"float16", at::kHalf},  {"float32", at::kFloat}, {"float64", at::kDouble},
      {"bool", at::kBool},    {"bfloat16", at::kBFloat16}};
  auto it = k.find(name);
  if (it == k.end()) {
    throw std::runtime_error("dtype '" + name + "' is not one capture keeps");
  }
  return it->second;
}

// A call's inputs from its raw files: each tensor's span as a storage of its
// own, viewed with the sizes and strides it was passed with.
std::vector<at::Tensor> raw_tensors(const fs::path& meta_path, const fs::path& bin_path) {
  nlohmann::json meta = read_request(meta_path.string());
  std::ifstream in(bin_path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<at::Tensor> out;
  for (const auto& t : meta.at("inputs")) {
    at::ScalarType type = scalar_type_named(t.at("dtype").get<std::string>());
    const int64_t item = static_cast<int64_t>(c10::elementSize(type));
    const int64_t offset = t.at("offset").get<int64_t>();
    const int64_t n = t.at("bytes").get<int64_t>();
    if (offset < 0 || n < 0 || offset + n > static_cast<int64_t>(bytes.size()) || n % item != 0) {
      throw std::runtime_error(meta_path.string() + " describes bytes its .bin does not hold");
    }
    at::Tensor storage = at::empty({n / item}, at::TensorOptions().dtype(type));
    if (n > 0) {
      std::memcpy(storage.data_ptr(), bytes.data() + offset, static_cast<size_t>(n));
    }
    auto sizes = t.at("sizes").get<std::vector<int64_t>>();
    auto strides = t.at("strides").get<std::vector<int64_t>>();
    out.push_back(n == 0 ? at::empty_strided(sizes, strides, storage.options())
                         : storage.as_strided(sizes, strides, t.at("first").get<int64_t>()));
  }
  return out;
}

c10::IValue spec_tree(const TreeSpec& s, const std::vector<at::Tensor>& leaves, size_t& next) {
  switch (s.kind) {
    case TreeSpec::Kind::leaf: return leaves.at(next++);
    case TreeSpec::Kind::none: return c10::IValue();
    case TreeSpec::Kind::dict: {
      c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
      for (size_t i = 0; i < s.children.size(); ++i) {
        d.insert(i < s.keys.size() ? s.keys[i] : std::to_string(i), spec_tree(s.children[i], leaves, next));
      }
      return d;
    }
    default: {
      std::vector<c10::IValue> items;
      for (const auto& c : s.children) {
        items.push_back(spec_tree(c, leaves, next));
      }
      return c10::ivalue::Tuple::create(std::move(items));
    }
  }
}

// The form `run` takes: (args, kwargs) where the spec has keywords, the args
// alone where it has none, a flat tuple where the spec does not fit.
c10::IValue kept_form(const std::vector<at::Tensor>& tensors, const std::string& in_spec, std::string& form) {
  std::optional<TreeSpec> spec = in_spec.empty() ? std::nullopt : parse_treespec(in_spec);
  if (spec && spec->kind == TreeSpec::Kind::tuple && spec->children.size() == 2 &&
      spec->leaves() == static_cast<int>(tensors.size())) {
    size_t next = 0;
    c10::IValue args = spec_tree(spec->children[0], tensors, next);
    c10::IValue kwargs = spec_tree(spec->children[1], tensors, next);
    if (spec->children[1].children.empty()) {
      form = "positional tuple";
      return args;
    }
    form = "(args, kwargs)";
    return c10::ivalue::Tuple::create({args, kwargs});
  }
  form = spec ? "positional (flattened: the call spec holds constants)" : "positional (no call spec)";
  return c10::ivalue::Tuple::create(std::vector<c10::IValue>(tensors.begin(), tensors.end()));
}

}  // namespace

int kept_inputs(const std::string& request) {
  return serve_request("--kept-inputs", request, [](const nlohmann::json& j) {
    const std::string in_spec = j.value("in_spec", "");
    nlohmann::json result = nlohmann::json::array();
    for (const auto& c : j.at("calls")) {
      nlohmann::json r = {{"out", c.at("out")}, {"form", nullptr}, {"error", nullptr}};
      try {
        std::string form;
        c10::IValue value = kept_form(raw_tensors(c.at("meta").get<std::string>(), c.at("bin").get<std::string>()),
                                      in_spec, form);
        write_file_atomic(c.at("out").get<std::string>(), save_plain(value));
        r["form"] = form;
      } catch (const std::exception& e) {
        std::string msg = e.what();
        r["error"] = msg.substr(0, msg.find('\n'));
      }
      result.push_back(r);
    }
    write_file_atomic(j.at("result").get<std::string>(), result.dump(1));
  });
}

void save_reference_rows(const fs::path& reference, const std::vector<int64_t>& rows, const fs::path& dest) {
  std::vector<at::Tensor> ref = load_tensors(reference, "reference file");
  const at::Tensor index = at::tensor(rows, at::kLong);
  std::vector<c10::IValue> items;
  for (auto& t : ref) {
    items.emplace_back(t.dim() >= 1 ? t.index_select(0, index.to(t.device())).cpu() : t.cpu());
  }
  std::vector<char> bytes = torch::jit::pickle_save(c10::ivalue::Tuple::create(std::move(items)));
  write_file_atomic(dest, std::string(bytes.begin(), bytes.end()));
}

int make_inputs(const std::string& request) {
  return serve_request("--make-inputs", request, [](const nlohmann::json& j) {
    MakeInputsRequest r = make_inputs_request_from_json(j);
    ModelFacts facts;
    if (!r.model_facts.empty()) {
      facts = model_facts_from_json(nlohmann::json::parse(read_file(r.model_facts, "model facts")));
    }
    std::vector<MadeInputs> made;
    for (const auto& c : r.cases) {
      made.push_back(make_one(c, facts));
    }
    write_file_atomic(r.result, to_json(made).dump(1));
  });
}

int compare_outputs(const std::string& request) {
  return serve_request("--compare-outputs", request, [](const nlohmann::json& j) {
    CompareOutputsRequest r = compare_outputs_request_from_json(j);
    ToleranceTable tolerances = tolerance_table_from_json(r.tolerances);
    std::vector<OutputsApart> apart;
    for (const auto& p : r.pairs) {
      apart.push_back(compare_pair(p, tolerances));
    }
    write_file_atomic(r.result, to_json(apart).dump(1));
  });
}

}  // namespace aoti_bisect::torchside
