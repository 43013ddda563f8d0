// The runner's utilities that load no model: inputs files cut from others
// (--make-inputs), and how far two outputs files are apart (--compare-outputs).
#include <cstdio>
#include <fstream>
#include <iterator>

#include <torch/torch.h>

#include "common/error.hpp"
#include "common/files.hpp"
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

}  // namespace

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
