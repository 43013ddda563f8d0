// A run over several batches, read from its events: each batch's own run, the events as one run of the
// last batch, each batch's outcome, and the facts that set the failing batch apart from the passing ones.

#include "classify/batch_runs.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "common/text.hpp"
#include "protocol/runner.hpp"

namespace aoti_bisect {

namespace {

// Events that describe one batch's run; the rest (start, loaded, hooks, the
// probe plan, fatal, signal, done) belong to the process.
bool per_batch(EventKind k) {
  switch (k) {
    case EventKind::inputs:
    case EventKind::input_mismatch:
    case EventKind::input_stats:
    case EventKind::run_begin:
    case EventKind::run_end:
    case EventKind::outputs:
    case EventKind::comparison:
    case EventKind::error:
    case EventKind::batch_end: return true;
    default: return false;
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t d : shape) {
    parts.push_back(std::to_string(d));
  }
  return "[" + join(parts, ", ") + "]";
}

bool is_integer_dtype(const std::string& dtype) {
  return dtype.rfind("int", 0) == 0 || dtype.rfind("uint", 0) == 0;
}

std::string number(double v) {
  return fmt::format("{}", static_cast<long long>(std::llround(v)));
}

// The values of input `i` the passing batches show, as one phrase.
template <class Get>
std::string passing_values(const std::vector<const BatchRun*>& passing, Get get) {
  std::set<std::string> seen;
  for (const BatchRun* b : passing) {
    if (auto v = get(*b)) {
      seen.insert(*v);
    }
  }
  std::vector<std::string> values(seen.begin(), seen.end());
  if (values.size() > 3) {
    values.resize(3);
    values.push_back("...");
  }
  return join(values, ", ");
}

}  // namespace

std::vector<BatchRun> batch_runs(const Events& events) {
  std::vector<BatchRun> out;
  for (const auto& e : events.of({EventKind::batch, EventKind::inputs, EventKind::input_stats,
                                  EventKind::input_mismatch, EventKind::batch_end})) {
    EventKind k = event_kind(e);
    if (k == EventKind::batch) {
      BatchRun b;
      b.index = e.value("index", static_cast<int>(out.size()));
      b.file = e.value("file", "");
      out.push_back(std::move(b));
      continue;
    }
    if (out.empty()) {
      continue;
    }
    BatchRun& b = out.back();
    if (k == EventKind::inputs) {
      for (const auto& t : e.value("tensors", nlohmann::json::array())) {
        b.inputs.push_back(tensor_info_from_json(t));
      }
    } else if (k == EventKind::input_stats) {
      for (const auto& t : e.value("tensors", nlohmann::json::array())) {
        b.input_stats.push_back(tensor_stats_from_json(t));
      }
    } else if (k == EventKind::input_mismatch) {
      b.problem = e.value("message", "");
    } else if (k == EventKind::batch_end) {
      b.returned = true;
      b.nonfinite = e.value("nonfinite", false);
      b.error = e.value("error", false);
    }
  }
  return out;
}

Events last_batch_view(const Events& events) {
  size_t last = events.size();
  for (size_t i = events.size(); i-- > 0;) {
    if (events.kind(i) == EventKind::batch) {
      last = i;
      break;
    }
  }
  if (last == events.size()) {
    return events;
  }
  Events out;
  for (size_t i = 0; i < events.size(); ++i) {
    if (i < last && per_batch(events.kind(i))) {
      continue;
    }
    out.push_from(events, i);
  }
  return out;
}

void classify_batches(std::vector<BatchRun>& runs, const Events& events, const Classification& last) {
  for (size_t r = 0; r < runs.size(); ++r) {
    BatchRun& b = runs[r];
    if (r + 1 == runs.size()) {
      b.kind = last.kind;
      b.first_line = last.first_line;
      continue;
    }
    if (!b.error && !b.nonfinite) {
      b.kind = OutcomeKind::ok;
      continue;
    }
    // Its own events, as a run of its own that ended as it did.
    Events own;
    int at = -1;
    for (size_t i = 0; i < events.size(); ++i) {
      EventKind k = events.kind(i);
      if (k == EventKind::batch) {
        at = events[i].value("index", at + 1);
        continue;
      }
      if (!per_batch(k) || at == b.index) {
        own.push_from(events, i);
      }
    }
    if (own.empty() || own.kind(own.size() - 1) != EventKind::done) {
      own.push_back({{"event", event_name(EventKind::done)}});
    }
    ExitStatus st;
    st.how = ExitStatus::How::exited;
    st.exit_code = static_cast<int>(b.error ? RunnerExit::model_error : RunnerExit::ran);
    Classification c = classify_run(st, own);
    b.kind = c.kind;
    b.first_line = c.first_line;
  }
}

std::vector<std::string> distinguishing_facts(const BatchRun& failing, const std::vector<const BatchRun*>& passing,
                                              const std::string& name, const std::string& others, bool shapes) {
  std::vector<std::string> facts;
  if (passing.empty()) {
    return facts;
  }
  for (size_t i = 0; i < failing.inputs.size(); ++i) {
    const TensorInfo& t = failing.inputs[i];
    auto input_of = [i](const BatchRun& b) -> const TensorInfo* {
      return i < b.inputs.size() ? &b.inputs[i] : nullptr;
    };
    bool shape_seen = std::any_of(passing.begin(), passing.end(), [&](const BatchRun* b) {
      const TensorInfo* p = input_of(*b);
      return p != nullptr && p->shape == t.shape;
    });
    if (!shape_seen && shapes) {
      facts.push_back(fmt::format("{}: input {} has shape {}; {} have {}", name, i, shape_text(t.shape), others,
                                  passing_values(passing, [&](const BatchRun& b) -> std::optional<std::string> {
                                    const TensorInfo* p = input_of(b);
                                    return p ? std::optional<std::string>(shape_text(p->shape)) : std::nullopt;
                                  })));
    }
    bool dtype_seen = std::any_of(passing.begin(), passing.end(), [&](const BatchRun* b) {
      const TensorInfo* p = input_of(*b);
      return p != nullptr && p->dtype == t.dtype;
    });
    if (!dtype_seen) {
      facts.push_back(fmt::format("{}: input {} is {}; {} hold {}", name, i, t.dtype, others,
                                  passing_values(passing, [&](const BatchRun& b) -> std::optional<std::string> {
                                    const TensorInfo* p = input_of(b);
                                    return p ? std::optional<std::string>(p->dtype) : std::nullopt;
                                  })));
    }
    if (i >= failing.input_stats.size()) {
      continue;
    }
    const TensorStats& s = failing.input_stats[i];
    auto stats_of = [i](const BatchRun& b) -> const TensorStats* {
      return i < b.input_stats.size() ? &b.input_stats[i] : nullptr;
    };
    bool clean_elsewhere = std::all_of(passing.begin(), passing.end(), [&](const BatchRun* b) {
      const TensorStats* p = stats_of(*b);
      return p == nullptr || p->nonfinite() == 0;
    });
    if (s.nonfinite() > 0 && clean_elsewhere) {
      facts.push_back(
          fmt::format("{}: input {} holds {} NaN and {} Inf; {} hold none", name, i, s.nan_count, s.inf_count, others));
    }
    if (!is_integer_dtype(t.dtype) || !s.min || !s.max) {
      continue;
    }
    std::optional<double> lo, hi;
    for (const BatchRun* b : passing) {
      const TensorStats* p = stats_of(*b);
      if (p != nullptr && p->min && p->max) {
        lo = lo ? std::min(*lo, *p->min) : *p->min;
        hi = hi ? std::max(*hi, *p->max) : *p->max;
      }
    }
    if (!lo) {
      continue;
    }
    if (*s.min == *s.max && *lo < *hi && *s.min >= *lo && *s.max <= *hi) {
      facts.push_back(fmt::format("{}: input {} holds only {}; {} hold {}..{}", name, i, number(*s.min), others,
                                  number(*lo), number(*hi)));
      continue;
    }
    if (*s.min >= *lo && *s.max <= *hi) {
      continue;
    }
    std::vector<std::string> outside;
    if (*s.min < *lo) {
      outside.push_back(number(*s.min));
    }
    if (*s.max > *hi) {
      outside.push_back(number(*s.max));
    }
    facts.push_back(fmt::format("{}: input {} holds {}; {} hold {}..{}", name, i, join(outside, " and "), others,
                                number(*lo), number(*hi)));
  }
  return facts;
}

}  // namespace aoti_bisect
