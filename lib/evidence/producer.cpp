// Where a culprit's bad input came from: an input already bad before the launch, the site or graph input
// that produced it, followed back past sites that only passed bad values on.

#include "evidence/producer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "common/text.hpp"
#include "evidence/evidence.hpp"

namespace aoti_bisect {

namespace {

// Why a tensor's values were already bad before a launch: non-finite, or an
// integer index outside the bound the error names (or negative, or beyond
// the int32 range, when no bound is known); nullopt when they look fine.
std::optional<std::string> bad_values(const TensorStats& st, bool flags, std::optional<int64_t> bound) {
  if (st.nonfinite() > 0) {
    return flags ? fmt::format("held {} before the launch", st.nonfinite_name())
                 : fmt::format("holds {} NaN and {} Inf before the launch", st.nan_count, st.inf_count);
  }
  bool integral = st.dtype.rfind("int", 0) == 0 || st.dtype.rfind("uint", 0) == 0;
  if (!integral || !st.min || !st.max) {
    return std::nullopt;
  }
  auto lo = static_cast<int64_t>(*st.min);
  auto hi = static_cast<int64_t>(*st.max);
  if (bound && (lo < 0 || hi >= *bound)) {
    return fmt::format("holds values in [{}, {}], outside [0, {})", lo, hi, *bound);
  }
  if (!bound && (lo < 0 || hi > std::numeric_limits<int32_t>::max())) {
    return fmt::format("holds values in [{}, {}]: not a plausible index", lo, hi);
  }
  return std::nullopt;
}

}  // namespace

// Among a site's written inputs, one that was already bad.
std::optional<std::pair<std::string, std::string>> bad_input(const SiteTrace& s, bool flags,
                                                             std::optional<int64_t> bound) {
  for (const auto& p : s.tensors) {
    if (!p.initialized || !p.before) {
      continue;
    }
    if (auto why = bad_values(*p.before, flags, bound)) {
      return std::make_pair(p.tensor, *why);
    }
  }
  return std::nullopt;
}

namespace {

// Whether `made`, bad values a site wrote, are what its input `read` already
// held, passed on: NaN/Inf from NaN/Inf; an out-of-range index whose extreme
// is the input's own (within 1: `idx + 0`, a copy, a cast). A site whose
// output's extreme differs (a clamp, then a multiply) made them itself.
bool passes_on(const TensorStats& read, const TensorStats& made, std::optional<int64_t> bound) {
  if (made.nonfinite() > 0) {
    return read.nonfinite() > 0;
  }
  if (!bad_values(read, false, bound) || !bad_values(made, false, bound) || !read.min || !read.max || !made.min ||
      !made.max) {
    return false;
  }
  auto near = [](double a, double b) { return std::abs(a - b) <= std::max(1.0, 1e-9 * std::abs(a)); };
  bool high = bound ? *made.max >= static_cast<double>(*bound) : *made.max > std::numeric_limits<int32_t>::max();
  return (high && near(*read.max, *made.max)) || (*made.min < 0 && near(*read.min, *made.min));
}

}  // namespace

Producer producer_of(const std::string& tensor, const std::string& why, int site, const RunTrace& history,
                     const WrapperInfo& wrapper) {
  Producer prod;
  prod.tensor = tensor;
  prod.why = tensor + " " + why;
  if (tensor.rfind("arg", 0) == 0) {
    for (const auto& in : wrapper.inputs) {
      if (in.name == tensor) {
        prod.why = fmt::format("graph input {} ({}) {}", in.index, tensor, why);
      }
    }
    return prod;
  }
  for (auto it = history.sites.begin(); it != history.sites.end() && it->first < site; ++it) {
    const auto& touched = it->second.touched;
    if (std::find(touched.begin(), touched.end(), tensor) != touched.end()) {
      prod.call_index = it->first;
      prod.kernel = it->second.kernel;
    }
  }
  return prod;
}

Producer walk_producer_back(Producer p, std::optional<int64_t> bound, const RunTrace& probed, const RunTrace& history,
                            const WrapperInfo& wrapper) {
  std::vector<std::string> passed;  // sites that only passed the bad values on
  std::set<int> seen;
  while (p.call_index && seen.insert(*p.call_index).second) {
    const SiteTrace* s = probed.site(*p.call_index);
    const ProbeStats* made = s ? s->find(p.tensor) : nullptr;
    if (made == nullptr || !made->after) {
      break;
    }
    if (made->initialized && made->before && !made->after->checksum.empty() &&
        made->before->checksum == made->after->checksum) {
      // The site only read it (an extern sort of the index): its writer came before.
      std::string why = p.why.rfind(p.tensor + " ", 0) == 0 ? p.why.substr(p.tensor.size() + 1) : p.why;
      p = producer_of(p.tensor, why, *p.call_index, history, wrapper);
      continue;
    }
    const ProbeStats* from = nullptr;
    for (const auto& q : s->tensors) {
      if (q.initialized && q.before && passes_on(*q.before, *made->after, bound)) {
        from = &q;
        break;
      }
    }
    if (from == nullptr) {
      break;  // it made them from values that were fine
    }
    passed.push_back(fmt::format("call site {} {}", *p.call_index, p.kernel));
    p = producer_of(from->tensor, bad_values(*from->before, probed.counts_are_flags, bound).value_or("holds them"),
                    *p.call_index, history, wrapper);
  }
  if (!passed.empty()) {
    p.why += fmt::format(" (passed on by {})", join(passed, ", "));
  }
  return p;
}

}  // namespace aoti_bisect
