// The neighbours of a failing input, planned from the package's dynamic sizes and index checks.
#include "verify/neighbours.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/text.hpp"

namespace aoti_bisect {

std::vector<int64_t> cyclic_rows(int64_t n, int64_t k) {
  std::vector<int64_t> rows;
  for (int64_t i = 0; n > 0 && i < k; ++i) {
    rows.push_back(i % n);
  }
  return rows;
}

namespace {

// The takes that cut every member of a size to `rows` (one take per
// dimension index, since a take cuts one dimension of its inputs).
InputCut cut_of(const std::vector<std::pair<int, int>>& members, const std::vector<int64_t>& rows) {
  std::map<int, std::vector<int>> by_dim;
  for (const auto& [input, dim] : members) {
    by_dim[dim].push_back(input);
  }
  InputCut cut;
  for (auto& [dim, inputs] : by_dim) {
    cut.takes.push_back({dim, inputs, rows});
  }
  return cut;
}

std::string inputs_text(const std::vector<std::pair<int, int>>& members) {
  std::set<int> inputs;
  for (const auto& m : members) {
    inputs.insert(m.first);
  }
  std::vector<std::string> t;
  for (int i : inputs) {
    t.push_back(std::to_string(i));
  }
  return fmt::format("input{} {}", t.size() == 1 ? "" : "s", join(t, ", "));
}

class Planner {
 public:
  explicit Planner(const NeighbourFacts& f) : m_f(f) {}

  NeighbourPlan plan() {
    m_plan.cases.push_back({"original", "the inputs as given", Neighbour::Base::original, {}, ""});
    if (m_f.minimal_file) {
      m_plan.cases.push_back({"minimal", minimal_what(), Neighbour::Base::minimal, {}, ""});
    }
    batch();
    other_sizes();
    indices();
    return std::move(m_plan);
  }

 private:
  const NeighbourFacts& m_f;
  NeighbourPlan m_plan;

  std::string minimal_what() const {
    std::vector<std::string> s;
    for (int64_t n : m_f.failing_samples) {
      s.push_back(std::to_string(n));
    }
    return s.empty() ? "the run's minimal failing inputs"
                     : fmt::format("the run's minimal failing set (sample{} {})", s.size() == 1 ? "" : "s",
                                   join(s, ", "));
  }

  // "input 0 (input_ids)", or "input 0" where the call spec names none
  // but its place ("args[0]").
  std::string label(int input) const {
    const auto i = static_cast<size_t>(input);
    const bool named = i < m_f.names.size() && !m_f.names[i].empty() && m_f.names[i].rfind("args[", 0) != 0;
    return named ? fmt::format("input {} ({})", input, m_f.names[i]) : fmt::format("input {}", input);
  }

  int64_t size_of(int input, int dim) const {
    const auto& shape = m_f.shapes.at(static_cast<size_t>(input));
    return static_cast<size_t>(dim) < shape.size() ? shape[static_cast<size_t>(dim)] : 0;
  }

  bool too_large(const std::string& name, int64_t k, int64_t n) {
    if (k <= n * m_f.max_growth) {
      return false;
    }
    m_plan.notes.push_back(fmt::format("{} ({}): not made: {}x the original {} along that dimension (the limit is {}x)",
                                       name, k, k / std::max<int64_t>(n, 1), n, m_f.max_growth));
    return true;
  }

  void add(const std::string& name, const std::string& what, InputCut cut, std::string note = "") {
    m_plan.cases.push_back({name, what, Neighbour::Base::original, std::move(cut), std::move(note)});
  }

  std::vector<std::pair<int, int>> batch_members() const {
    std::vector<std::pair<int, int>> m;
    for (int i : m_f.batch.inputs) {
      m.emplace_back(i, 0);
    }
    return m;
  }

  void batch() {
    const BatchDimension& b = m_f.batch;
    if (b.kind == BatchDimension::Kind::fixed) {
      fixed_batch();
      return;
    }
    if (b.kind != BatchDimension::Kind::dynamic || b.inputs.empty()) {
      m_plan.notes.push_back("no batch neighbours: " + (b.why.empty() ? "the package has no dynamic batch" : b.why));
      return;
    }
    const auto members = batch_members();
    const int64_t n = size_of(b.inputs.front(), 0);
    if (n <= 0) {
      return;
    }
    if (m_f.failing_samples.size() > 1 || !m_f.minimal_file) {
      for (size_t k = 0; k < std::min<size_t>(m_f.failing_samples.size(), 4); ++k) {
        int64_t s = m_f.failing_samples[k];
        if (s >= 1 && s <= n) {
          add(fmt::format("sample-{}", s), fmt::format("sample {} alone", s), cut_of(members, {s - 1}),
              below_min(1));
        }
      }
    }
    std::set<int64_t> made = {n};
    if (n > 1) {
      add("batch-1", "batch of 1 sample (the last batch of a loader)", cut_of(members, {n - 1}), below_min(1));
      made.insert(1);
    }
    if (b.min && *b.min > 1 && !made.count(*b.min) && !too_large("batch-min", *b.min, n)) {
      add("batch-min", fmt::format("batch of {} (the compiled minimum)", *b.min),
          cut_of(members, cyclic_rows(n, *b.min)));
      made.insert(*b.min);
    }
    if (n - 1 > 1 && !made.count(n - 1)) {
      add("batch-minus-1", fmt::format("batch of {} (one sample fewer: an incomplete last batch)", n - 1),
          cut_of(members, cyclic_rows(n, n - 1)), below_min(n - 1));
      made.insert(n - 1);
    }
    if ((!b.max || 2 * n <= *b.max) && !made.count(2 * n)) {
      add("batch-double", fmt::format("batch of {} (the samples repeated)", 2 * n),
          cut_of(members, cyclic_rows(n, 2 * n)));
      made.insert(2 * n);
    }
    if (b.max && !made.count(*b.max) && *b.max > n && !too_large("batch-max", *b.max, n)) {
      add("batch-max", fmt::format("batch of {} (the compiled maximum, the samples repeated)", *b.max),
          cut_of(members, cyclic_rows(n, *b.max)));
    }
  }

  std::string below_min(int64_t k) const {
    const auto& min = m_f.batch.min;
    return min && k < *min ? fmt::format("batch {} is below the package's compiled minimum {}: run as the package runs "
                                         "by default, with its input checks off",
                                         k, *min)
                           : "";
  }

  // A package compiled for one batch takes a failing sample only repeated
  // to that batch.
  void fixed_batch() {
    const int64_t n = m_f.batch.size;
    std::vector<std::pair<int, int>> members;
    for (size_t i = 0; i < m_f.shapes.size(); ++i) {
      if (!m_f.shapes[i].empty() && m_f.shapes[i][0] == n) {
        members.emplace_back(static_cast<int>(i), 0);
      }
    }
    m_plan.notes.push_back(fmt::format("the package takes only batch {}: no neighbours of another batch size", n));
    if (m_f.failing_samples.size() > 1 || !m_f.minimal_file) {
      for (size_t k = 0; k < std::min<size_t>(m_f.failing_samples.size(), 4); ++k) {
        int64_t s = m_f.failing_samples[k];
        if (s >= 1 && s <= n && n > 1) {
          add(fmt::format("sample-{}", s), fmt::format("sample {} repeated to the package's batch of {}", s, n),
              cut_of(members, std::vector<int64_t>(static_cast<size_t>(n), s - 1)));
        }
      }
    }
  }

  bool is_batch(const DynamicDimension& d) const {
    if (m_f.batch.kind != BatchDimension::Kind::dynamic) {
      return false;
    }
    return std::any_of(d.members.begin(), d.members.end(), [&](const auto& m) {
      return m.second == 0 && std::count(m_f.batch.inputs.begin(), m_f.batch.inputs.end(), m.first) > 0;
    });
  }

  void other_sizes() {
    for (const auto& d : m_f.dims) {
      if (d.members.empty() || is_batch(d)) {
        continue;
      }
      const auto [input, dim] = d.members.front();
      const int64_t n = size_of(input, dim);
      if (n <= 0) {
        continue;
      }
      const std::string stem = fmt::format("input{}-dim{}", input, dim);
      const std::string with =
          d.members.size() > 1 ? fmt::format("; {} cut with it", inputs_text(d.members)) : std::string();
      if (d.min && *d.min != n && *d.min > 0) {
        add(stem + "-min",
            fmt::format("{} dimension {} at its compiled minimum {} (the original is {}{})", label(input), dim, *d.min,
                        n, with),
            cut_of(d.members, cyclic_rows(n, *d.min)));
      }
      if (d.max && *d.max != n) {
        if (!too_large(stem + "-max", *d.max, n)) {
          add(stem + "-max",
              fmt::format("{} dimension {} at its compiled maximum {} (the original {} repeated{})", label(input), dim,
                          *d.max, n, with),
              cut_of(d.members, cyclic_rows(n, *d.max)));
        }
      } else if (!d.max) {
        add(stem + "-double",
            fmt::format("{} dimension {} at {}, twice the original (no compiled maximum{})", label(input), dim, 2 * n,
                        with),
            cut_of(d.members, cyclic_rows(n, 2 * n)));
      }
    }
  }

  void indices() {
    for (const auto& b : m_f.bounds) {
      if (b.bound <= 0 || static_cast<size_t>(b.input) >= m_f.shapes.size()) {
        continue;
      }
      const std::string checked =
          b.table.empty() ? fmt::format("call site {} {} checks it against {}", b.call_index, b.kernel, b.bound)
                          : fmt::format("call site {} {} reads that row of {}, a table of {} rows, with no index check",
                                        b.call_index, b.kernel, b.table, b.bound);
      InputCut low;
      low.fills.push_back({b.input, 0});
      add(fmt::format("input{}-index-0", b.input),
          fmt::format("{} filled with 0, the smallest index ({})", label(b.input), checked), low);
      if (b.bound > 1) {
        InputCut high;
        high.fills.push_back({b.input, b.bound - 1});
        add(fmt::format("input{}-index-{}", b.input, b.bound - 1),
            fmt::format("{} filled with {}, the largest valid index ({})", label(b.input), b.bound - 1, checked), high);
      }
    }
  }
};

}  // namespace

NeighbourPlan plan_neighbours(const NeighbourFacts& facts) {
  return Planner(facts).plan();
}

}  // namespace aoti_bisect
