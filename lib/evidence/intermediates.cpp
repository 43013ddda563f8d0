// The traced replay's report read back (evidence/intermediates.hpp).
#include "evidence/intermediates.hpp"

#include <algorithm>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/cpp_text.hpp"

namespace aoti_bisect {

IntermediateTrace read_intermediate_trace(const std::string& out) {
  IntermediateTrace t;
  for (auto line : cpp_text::split_lines(out)) {
    if (std::string_view(line).starts_with("AOTI_TRACE_END ")) {
      auto j = nlohmann::json::parse(line.substr(15), nullptr, false);
      t.ran = j.is_object();
      t.statements = t.ran ? j.value("statements", 0) : 0;
      continue;
    }
    if (!std::string_view(line).starts_with("AOTI_TRACE {")) {
      continue;
    }
    auto j = nlohmann::json::parse(line.substr(11), nullptr, false);
    if (!j.is_object()) {
      continue;
    }
    IntermediateHit h;
    h.kind = j.value("kind", "");
    h.statement = j.value("statement", 0);
    h.target = j.value("target", "");
    h.text = j.value("text", "");
    h.value = j.value("value", "");
    h.lane = j.value("lane", 0);
    h.lanes = j.value("lanes", 1);
    h.count = j.value("count", int64_t{0});
    if (j.contains("loops") && j["loops"].is_array()) {
      for (const auto& e : j["loops"]) {
        if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_number_integer()) {
          h.element.emplace_back(e[0].get<std::string>(), e[1].get<int64_t>());
        }
      }
    }
    if (j.contains("operands") && j["operands"].is_array()) {
      for (const auto& e : j["operands"]) {
        if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
          h.operands.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
        }
      }
    }
    if (j.contains("output") && j["output"].is_object()) {
      h.output_tensor = j["output"].value("tensor", "");
      if (j["output"].contains("index") && j["output"]["index"].is_array()) {
        for (const auto& x : j["output"]["index"]) {
          if (x.is_number_integer()) {
            h.output_index.push_back(x.get<int64_t>());
          }
        }
      }
    }
    if (h.kind == "nan" || h.kind == "inf") {
      t.hits.push_back(std::move(h));
    }
  }
  std::stable_sort(t.hits.begin(), t.hits.end(), [](const IntermediateHit& a, const IntermediateHit& b) {
    return a.kind != b.kind ? a.kind == "nan" : a.statement < b.statement;
  });
  // One expression the kernel computes in several places (its main loop and
  // its tail): one hit, counted over all of them, at the first.
  std::vector<IntermediateHit> merged;
  for (auto& h : t.hits) {
    auto same = std::find_if(merged.begin(), merged.end(),
                             [&](const IntermediateHit& m) { return m.kind == h.kind && m.text == h.text; });
    if (same == merged.end()) {
      merged.push_back(std::move(h));
    } else {
      same->count += h.count;
    }
  }
  t.hits = std::move(merged);
  return t;
}

namespace {

const IntermediateHit* first_of(const IntermediateTrace& trace, const std::string& kind, int before = -1) {
  // One computed from intermediates first: a literal (`tmp6 =
  // std::numeric_limits<float>::infinity()`, an isinf test's bound) makes
  // its value from nothing, and names the operation only where nothing else did.
  for (bool computed : {true, false}) {
    for (const auto& h : trace.hits) {
      if (h.kind == kind && h.operands.empty() != computed && (before < 0 || h.statement < before)) {
        return &h;
      }
    }
  }
  return nullptr;
}

}  // namespace

std::vector<const IntermediateHit*> introduction(const IntermediateTrace& trace, bool made_nan) {
  const IntermediateHit* first = first_of(trace, made_nan ? "nan" : "inf");
  if (first == nullptr) {
    return {};
  }
  // NaN made of Inf (inf - inf, 0 × inf): where an earlier statement made
  // that Inf from finite operands, it comes first.
  bool from_inf =
      first->kind == "nan" && std::any_of(first->operands.begin(), first->operands.end(),
                                          [](const auto& o) { return o.second == "inf" || o.second == "-inf"; });
  if (from_inf) {
    if (const IntermediateHit* inf = first_of(trace, "inf", first->statement);
        inf != nullptr && !inf->operands.empty()) {
      return {inf, first};
    }
  }
  return {first};
}

}  // namespace aoti_bisect
