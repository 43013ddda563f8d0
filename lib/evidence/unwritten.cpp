// The poison variant's evidence: NaN a kernel made told apart from the poison in memory no kernel wrote,
// traces without the poison, and a site's read of unwritten memory, in words.

#include "evidence/unwritten.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace aoti_bisect {

namespace {

std::string shape_text(const TensorStats& t) {
  std::string out;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    out += (i ? "x" : "") + std::to_string(t.shape[i]);
  }
  return out.empty() ? "scalar" : out;
}

}  // namespace

int64_t made_nan(const TensorStats& t) {
  return t.nan_count - std::min(t.nan_count, std::max<int64_t>(t.unwritten, 0));
}

RunTrace without_poison(const RunTrace& trace) {
  RunTrace out = trace;
  for (auto& [k, s] : out.sites) {
    for (auto& p : s.tensors) {
      for (auto* st : {&p.before, &p.after}) {
        if (*st) {
          (*st)->nan_count = made_nan(**st);
        }
      }
    }
  }
  return out;
}

std::optional<UnwrittenRead> unwritten_read(const SiteTrace& s) {
  for (const auto& p : s.tensors) {
    if (p.initialized && p.before && p.before->unwritten > 0) {
      return UnwrittenRead{&p, true};
    }
  }
  for (const auto& p : s.tensors) {
    // Never written by anyone, and only read here (its bytes unchanged).
    if (!p.initialized && p.before && p.after && p.before->unwritten > 0 && p.before->unwritten == p.before->numel &&
        !p.before->checksum.empty() && p.before->checksum == p.after->checksum) {
      return UnwrittenRead{&p, true, true};
    }
  }
  for (const auto& p : s.tensors) {
    if (p.after && p.after->unwritten > 0) {
      return UnwrittenRead{&p, false};
    }
  }
  return std::nullopt;
}

std::string unwritten_text(const UnwrittenRead& u) {
  const TensorStats& st = u.before ? *u.probe->before : *u.probe->after;
  if (u.never_written) {
    return fmt::format(
        "reads memory no kernel wrote: none of the {} elements of {} ({} {}) it reads was ever "
        "written (all still hold the poison they were allocated with)",
        st.numel, u.probe->tensor, shape_text(st), st.dtype);
  }
  return fmt::format(
      "reads memory no kernel wrote: {} of the {} elements of {} ({} {}) {} the poison they were "
      "allocated with",
      st.unwritten, st.numel, u.probe->tensor, shape_text(st), st.dtype,
      u.before ? "it reads still hold" : "still hold, after its launch,");
}

}  // namespace aoti_bisect
