// Where a sample depends on its batch, the runner's side
// (job/batch_dependence.hpp): each sample's saved values alone, read when
// their call site is probed, against its rows of this run's batch.

#include <fstream>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/torch.h>

#include "common/error.hpp"
#include "protocol/values.hpp"
#include "torchside/internal.hpp"

namespace aoti_bisect::torchside {

std::vector<int64_t> unravel_index(int64_t flat, c10::IntArrayRef sizes) {
  std::vector<int64_t> index(sizes.size(), 0);
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] > 0) {
      index[d] = flat % sizes[d];
      flat /= sizes[d];
    }
  }
  return index;
}

at::Tensor load_saved_tensor(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && bytes.empty()) {
    throw std::runtime_error("cannot read " + file);
  }
  return torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end())).toTensor();
}

nlohmann::json compare_rows(const at::Tensor& t, const at::Tensor& alone, const SampleRows& rows) {
  auto sizes_text = [](c10::IntArrayRef v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      out += (i > 0 ? ", " : "") + std::to_string(v[i]);
    }
    return out + "]";
  };
  if (t.dim() != alone.dim()) {
    return {{"unmatched", fmt::format("{} dimensions here, {} alone", t.dim(), alone.dim())}};
  }
  std::vector<int64_t> scaled;
  bool other = false;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == alone.size(d)) {
      continue;
    }
    if (t.size(d) * rows.alone == alone.size(d) * rows.batch && t.size(d) % rows.batch == 0) {
      scaled.push_back(d);
    } else {
      other = true;
    }
  }
  if (other || scaled.size() > 1) {
    return {{"unmatched", fmt::format("sizes {} here, {} alone: no one dimension holds the batch",
                                      sizes_text(t.sizes()), sizes_text(alone.sizes()))}};
  }
  at::Tensor a = t;
  at::Tensor b = alone;
  nlohmann::json where;
  int64_t offset = 0;
  if (scaled.empty()) {
    where = {{"whole", true}};
  } else {
    const int64_t d = scaled.front();
    const int64_t chunk = t.size(d) / rows.batch;
    offset = rows.sample * chunk;
    a = t.narrow(d, offset, chunk);
    b = alone.narrow(d, 0, chunk);
    where = {{"dim", d}, {"from", offset}, {"count", chunk}};
  }
  if (a.numel() == 0) {
    return {{"unmatched", "no elements"}};
  }
  ValueDiff v = diff_values(a, b);
  std::vector<int64_t> worst = v.worst_flat >= 0 ? unravel_index(v.worst_flat, a.sizes()) : std::vector<int64_t>{};
  if (!scaled.empty() && !worst.empty()) {
    worst[static_cast<size_t>(scaled.front())] += offset;
  }
  return {{"candidate", 0},
          {"expected_dtype", dtype_name(alone.scalar_type())},
          {"max_abs", v.nonfinite > 0 ? nlohmann::json(nullptr) : nlohmann::json(v.max_abs)},
          {"scale", v.scale},
          {"nonfinite", v.nonfinite},
          {"differ", v.differ},
          {"elements", a.numel()},
          {"worst", worst},
          {"actual", json_number(v.actual)},
          {"expected", json_number(v.expected)},
          {"rows", where}};
}

std::vector<SampleReference> read_sample_references(const nlohmann::json& j, const std::string& path) {
  const nlohmann::json& rows = j["rows"];
  const int64_t batch = rows.value("batch", int64_t{0});
  const int64_t alone = rows.value("alone", int64_t{0});
  auto malformed = [&] { return Error(ErrorKind::cannot_test, "the per-site reference '" + path + "' is malformed"); };
  if (batch <= 0 || alone <= 0 || !j["samples"].is_array()) {
    throw malformed();
  }
  std::vector<SampleReference> out;
  for (const auto& one : j["samples"]) {
    SampleReference ref;
    ref.rows = SampleRows{batch, one.value("alone", alone), one.value("sample", int64_t{-1})};
    if (ref.rows.alone <= 0 || ref.rows.sample < 0 || ref.rows.sample >= batch || !one.contains("sites") ||
        !one["sites"].is_object()) {
      throw malformed();
    }
    for (const auto& [site, tensors] : one["sites"].items()) {
      for (const auto& [name, file] : tensors.items()) {
        ref.files[{std::stoi(site), name}] = file.is_string() ? file.get<std::string>() : std::string();
      }
    }
    out.push_back(std::move(ref));
  }
  return out;
}

nlohmann::json compare_samples(const at::Tensor& t, int site, const std::string& name,
                               const std::vector<SampleReference>& refs) {
  nlohmann::json each = nlohmann::json::array();
  for (const auto& ref : refs) {
    auto it = ref.files.find({site, name});
    if (it == ref.files.end()) {
      continue;
    }
    nlohmann::json c;
    try {
      c = compare_rows(t, load_saved_tensor(it->second), ref.rows);
    } catch (const std::exception& e) {
      std::string msg = e.what();
      c = {{"unmatched", "its value alone cannot be read: " + msg.substr(0, msg.find('\n'))}};
    }
    c["sample"] = ref.rows.sample;
    each.push_back(std::move(c));
  }
  return each;
}

}  // namespace aoti_bisect::torchside
