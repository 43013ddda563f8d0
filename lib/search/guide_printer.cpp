// Guide mode's reading of the level-2 printer's output
// (aoti_torch_print_tensor_handle): the printed blocks, which call site each
// belongs to, and the run trace and step answer they make.

#include "search/guide_printer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "common/text.hpp"
#include "search/search.hpp"

namespace aoti_bisect {
namespace {

// "[  before_launch - cpp_fused_log_2 - buf7  ]:" -> the block's identity.
std::optional<PrintedTensor> parse_header(std::string_view line) {
  line = trim(line);
  if (line.size() < 4 || line.front() != '[' || line.substr(line.size() - 2) != "]:") {
    return std::nullopt;
  }
  std::string_view inner = trim(line.substr(1, line.size() - 3));
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    size_t sep = inner.find(" - ", at);
    parts.emplace_back(trim(inner.substr(at, sep == std::string_view::npos ? sep : sep - at)));
    if (sep == std::string_view::npos) {
      break;
    }
    at = sep + 3;
  }
  PrintedTensor t;
  if (parts.size() == 2 && parts[0] == "aoti_model_inputs") {
    t.phase = parts[0];
    t.tensor = parts[1];
  } else if (parts.size() == 3 && (parts[0] == "before_launch" || parts[0] == "after_launch")) {
    t.phase = parts[0];
    t.kernel = parts[1];
    t.tensor = parts[2];
  } else {
    return std::nullopt;
  }
  return t;
}

// strtod reads "nan", "-nan", "inf" and "-inf" as the printer writes them.
std::optional<double> parse_number(std::string_view text) {
  std::string s(trim(text));
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str()) {
    return std::nullopt;
  }
  return v;
}

// "[8, 32]" -> {8, 32}; "[]" -> {}.
std::vector<int64_t> parse_tensor_size(std::string_view text) {
  std::vector<int64_t> dims;
  std::string s(trim(text));
  for (char& c : s) {
    c = (c == '[' || c == ']' || c == ',') ? ' ' : c;
  }
  std::istringstream in(s);
  int64_t d = 0;
  while (in >> d) {
    dims.push_back(d);
  }
  return dims;
}

// The printer writes C++ type names ("long int"); the rest of the report
// speaks torch dtypes.
std::string normalize_dtype(std::string_view name) {
  static const std::map<std::string, std::string, std::less<>> names = {
      {"float", "float32"},  {"double", "float64"},   {"c10::Half", "float16"},   {"c10::BFloat16", "bfloat16"},
      {"long int", "int64"}, {"long", "int64"},       {"int", "int32"},           {"short int", "int16"},
      {"short", "int16"},    {"signed char", "int8"}, {"unsigned char", "uint8"}, {"bool", "bool"},
  };
  auto it = names.find(name);
  return it == names.end() ? std::string(name) : it->second;
}

bool finite_or_absent(const std::optional<double>& v) {
  return !v || std::isfinite(*v);
}

// A field line "Name: value" of the current block; others are element values.
void apply_field(PrintedTensor& t, std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return;
  }
  std::string_view key = trim(line.substr(0, colon));
  std::string_view value = trim(line.substr(colon + 1));
  if (key == "Number of elements") {
    t.numel = static_cast<int64_t>(parse_number(value).value_or(0));
  } else if (key == "Dtype") {
    t.dtype = normalize_dtype(value);
  } else if (key == "Mean value") {
    t.mean = parse_number(value);
  } else if (key == "Min value") {
    t.min = parse_number(value);
  } else if (key == "Max value") {
    t.max = parse_number(value);
  } else if (key == "Size") {
    t.shape = parse_tensor_size(value);
  }
}

bool is_graph_input(const std::string& tensor) {
  return is_graph_input_name(tensor);
}

}  // namespace

std::vector<PrintedTensor> parse_printer_output(std::string_view text) {
  std::vector<PrintedTensor> out;
  bool open = false;
  auto close = [&] {
    if (open) {
      PrintedTensor& t = out.back();
      t.has_nonfinite = !finite_or_absent(t.min) || !finite_or_absent(t.max) || !finite_or_absent(t.mean);
    }
    open = false;
  };
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    std::string_view line = text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    at = nl == std::string_view::npos ? text.size() : nl + 1;
    if (auto header = parse_header(line)) {
      close();
      out.push_back(std::move(*header));
      open = true;
    } else if (open && trim(line).empty()) {
      close();
    } else if (open) {
      apply_field(out.back(), line);
    }
  }
  close();
  return out;
}

std::vector<std::string> printing_kernels(const std::string& source, const std::vector<CallSite>& sites) {
  std::vector<std::string_view> lines;
  std::string_view text(source);
  for (size_t at = 0; at <= text.size();) {
    size_t nl = text.find('\n', at);
    lines.push_back(text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    if (nl == std::string_view::npos) {
      break;
    }
    at = nl + 1;
  }
  std::vector<std::string> out;
  int previous = 0;  // line of the previous call site
  for (const auto& site : sites) {
    if (site.line <= 0) {
      out.push_back(site.kernel);  // no position known: assume it prints
      continue;
    }
    std::string marker = "\"before_launch - " + site.kernel + " - ";
    bool prints = false;
    for (int l = previous + 1; l < site.line && l <= static_cast<int>(lines.size()); ++l) {
      std::string_view line = lines[l - 1];
      prints = prints || (line.find("aoti_torch_print_tensor_handle(") != std::string_view::npos &&
                          line.find(marker) != std::string_view::npos);
    }
    out.push_back(prints ? site.kernel : "");
    previous = site.line;
  }
  return out;
}

SiteMapping map_printed_sites(const std::vector<PrintedTensor>& printed, const std::vector<std::string>& printing) {
  SiteMapping m;
  std::map<std::string, std::vector<int>> sites_of;  // kernel -> its printing sites, in order
  for (size_t i = 0; i < printing.size(); ++i) {
    if (!printing[i].empty()) {
      sites_of[printing[i]].push_back(static_cast<int>(i) + 1);
    }
  }
  std::map<std::string, size_t> groups_of;  // kernel -> groups seen
  std::set<std::string> written;            // tensors printed after some launch
  auto finish = [&] {
    if (!m.sites.empty()) {
      for (const auto& t : m.sites.back().after) {
        written.insert(t.tensor);
      }
    }
  };
  for (const auto& t : printed) {
    if (t.phase == "aoti_model_inputs") {
      continue;
    }
    PrintedSite* cur = m.sites.empty() ? nullptr : &m.sites.back();
    bool new_group = cur == nullptr || cur->kernel != t.kernel || (t.phase == "before_launch" && !cur->after.empty());
    if (new_group) {
      finish();
      size_t k = groups_of[t.kernel]++;
      const auto& candidates = sites_of[t.kernel];
      if (k >= candidates.size()) {
        m.problem = fmt::format("the run printed {} groups for {}, the wrapper launches it from {} printing sites",
                                k + 1, t.kernel, candidates.size());
        return m;
      }
      m.sites.push_back(PrintedSite{candidates[k], t.kernel, {}, {}, {}});
      cur = &m.sites.back();
    }
    if (t.phase == "before_launch") {
      if (is_graph_input(t.tensor) || written.count(t.tensor)) {
        cur->initialized.insert(t.tensor);
      }
      cur->before.push_back(t);
    } else {
      cur->after.push_back(t);
    }
  }
  return m;
}

RunTrace trace_from_printer(const SiteMapping& mapping) {
  RunTrace t;
  t.counts_are_flags = true;
  for (const auto& ps : mapping.sites) {
    SiteTrace& st = t.sites[ps.site];
    st.site = ps.site;
    st.kernel = ps.kernel;
    st.began = true;
    st.ended = !ps.after.empty();
    for (const auto& b : ps.before) {
      st.tensors.push_back(ProbeStats{b.tensor, ps.initialized.count(b.tensor) > 0, stats_of(b), std::nullopt});
    }
    for (const auto& a : ps.after) {
      st.touched.push_back(a.tensor);
      auto it =
          std::find_if(st.tensors.begin(), st.tensors.end(), [&](const ProbeStats& p) { return p.tensor == a.tensor; });
      if (it == st.tensors.end()) {
        st.tensors.push_back(ProbeStats{a.tensor, false, std::nullopt, stats_of(a)});
      } else {
        it->after = stats_of(a);
      }
    }
  }
  if (!mapping.sites.empty() && mapping.sites.back().after.empty() && !mapping.sites.back().before.empty()) {
    t.unfinished = mapping.sites.back().site;
  }
  return t;
}

TensorStats stats_of(const PrintedTensor& t) {
  TensorStats s;
  s.name = t.tensor;
  s.dtype = t.dtype;
  s.shape = t.shape;
  s.numel = t.numel;
  s.min = t.min;
  s.max = t.max;
  s.mean = t.mean;
  // The printer gives no counts: these are flags (1 = some element is NaN,
  // resp. +-Inf, as far as min/max/mean show), not counts.
  auto any = [&](auto pred) { return (t.min && pred(*t.min)) || (t.max && pred(*t.max)) || (t.mean && pred(*t.mean)); };
  s.nan_count = any([](double v) { return std::isnan(v); }) ? 1 : 0;
  s.inf_count = any([](double v) { return std::isinf(v); }) ? 1 : 0;
  return s;
}

Probe guide_answer(Predicate pred, OutcomeKind expected, const Classification& cls, const SiteMapping& mapping, int lo,
                   int hi, const std::set<std::string>& inf_by_design) {
  if (!mapping.problem.empty() && !cls.internal && !cls.cannot_test) {
    return Probe{StepVerdict::error, std::nullopt, 1, 1, mapping.problem};
  }
  return answer_step(pred, expected, cls, trace_from_printer(mapping), lo, hi, {}, false, inf_by_design);
}

std::vector<std::string> range_printing(const WrapperInfo& wrapper, const std::set<int>& only) {
  std::vector<std::string> out;
  for (const auto& site : wrapper.call_sites) {
    // insert_probes' rule: a site with a known line, in `only`, and at least
    // one argument that names a tensor variable.
    bool prints = site.line > 0 && only.count(site.index) > 0 &&
                  std::any_of(site.args.begin(), site.args.end(),
                              [](const std::string& a) { return is_tensor_variable_name(a); });
    out.push_back(prints ? site.kernel : "");
  }
  return out;
}

}  // namespace aoti_bisect
