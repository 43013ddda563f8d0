#pragma once
// A scripted ChildRunner for unit tests of the job and the search: no
// process runs; each request is answered by a script that returns the exit
// status and the event lines a runner would have written. FakeModel is a
// small simulation of an instrumented model with one bad call site, which
// answers probe plans the way the runner's probes do.

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/children.hpp"
#include "harness/progress.hpp"
#include "process/process.hpp"
#include "protocol/runner.hpp"

namespace fake {

// A Progress that shows nothing (the tests read the report).
class SilentProgress : public aoti_bisect::Progress {
 public:
  void phase(const std::string&, const std::string&) override {}
  void run_started(const std::string&, int, int) override {}
  void run_finished(const std::string&, aoti_bisect::OutcomeKind, const std::string&, double, int, int) override {}
  void note(const std::string&) override {}
};

// A test's change to a run's events: as JSON objects, then held again.
inline void edit_events(aoti_bisect::Events& events, const std::function<void(std::vector<nlohmann::json>&)>& edit) {
  std::vector<nlohmann::json> all(events.begin(), events.end());
  edit(all);
  events = aoti_bisect::Events(all);
}

// The ids of the runs asked for, in order.
inline std::vector<std::string> ids(const std::vector<aoti_bisect::ChildRequest>& log) {
  std::vector<std::string> out;
  for (const auto& r : log) {
    out.push_back(r.id);
  }
  return out;
}

using nlohmann::json;
using Script = std::function<aoti_bisect::ChildOutput(const aoti_bisect::ChildRequest&)>;

class FakeChildren : public aoti_bisect::ChildRunner {
 public:
  FakeChildren(Script script, std::vector<aoti_bisect::ChildRequest>& log) : m_script(std::move(script)), m_log(log) {}

  int start(const aoti_bisect::ChildRequest& request) override {
    m_log.push_back(request);
    m_queue.push_back({m_next, request});
    return m_next++;
  }

  std::pair<int, aoti_bisect::ChildOutput> wait_any() override {
    if (m_queue.empty()) {
      return {-1, {}};
    }
    auto [token, request] = m_queue.front();
    m_queue.pop_front();
    aoti_bisect::ChildOutput out = m_script(request);
    if (aoti_bisect::interrupt_requested()) {
      out.status.how = aoti_bisect::ExitStatus::How::interrupted;
    }
    return {token, out};
  }

  void kill_all() override { m_queue.clear(); }

 private:
  Script m_script;
  std::vector<aoti_bisect::ChildRequest>& m_log;
  std::deque<std::pair<int, aoti_bisect::ChildRequest>> m_queue;
  int m_next = 0;
};

inline json stats(const std::string& name, int nan, const std::string& dtype = "float32") {
  return {{"name", name}, {"dtype", dtype}, {"shape", {4}}, {"numel", 4},  {"nan", nan},
          {"inf", 0},     {"min", 0.0},     {"max", 1.0},   {"mean", 0.5}, {"checksum", "x"}};
}

inline aoti_bisect::ExitStatus exited(int code) {
  aoti_bisect::ExitStatus s;
  s.how = aoti_bisect::ExitStatus::How::exited;
  s.exit_code = code;
  s.seconds = 0.1;
  return s;
}

inline aoti_bisect::ExitStatus killed(int sig) {
  aoti_bisect::ExitStatus s;
  s.how = aoti_bisect::ExitStatus::How::signaled;
  s.signal = sig;
  s.seconds = 0.1;
  return s;
}

// A model of `sites` call sites (kernels k1..kN, site i writes buf<i> from
// buf<i-1>) whose site `bad` introduces NaN (or faults, with `fault`).
struct FakeModel {
  int sites = 9;
  int bad = 5;
  bool fault = false;
  bool bad_after_probes = true;  // false: the failure vanishes under stats probes (suppressed)

  std::vector<json> run_events(const aoti_bisect::ChildRequest& req, bool& crashed) const {
    std::vector<json> ev = {{{"event", "start"}, {"torch", "2.13.0"}},
                            {{"event", "inputs"}, {"tensors", json::array()}},
                            {{"event", "input_stats"}, {"tensors", {stats("input0", 0)}}},
                            {{"event", "run_begin"}}};
    crashed = false;
    bool poisoned = false;
    for (int k = 1; k <= sites; ++k) {
      auto mode = req.probe_plan ? req.probe_plan->mode_for(k) : aoti_bisect::ProbeMode::off;
      std::string kernel = "k" + std::to_string(k);
      std::string in = k == 1 ? "arg0_1" : "buf" + std::to_string(k - 1);
      std::string out = "buf" + std::to_string(k);
      if (mode >= aoti_bisect::ProbeMode::trace) {
        ev.push_back({{"event", "site_begin"}, {"site", k}, {"kernel", kernel}});
      }
      if (mode >= aoti_bisect::ProbeMode::stats) {
        ev.push_back(probe(k, "before", in, true, poisoned ? 4 : 0));
        ev.push_back(probe(k, "before", out, false, 0));
      }
      if (k == bad && fault) {
        crashed = true;
        return ev;
      }
      poisoned = poisoned || k == bad;
      if (mode >= aoti_bisect::ProbeMode::trace) {
        ev.push_back({{"event", "site_end"}, {"site", k}, {"kernel", kernel}, {"tensors", {in, out}}});
      }
      if (mode >= aoti_bisect::ProbeMode::stats) {
        ev.push_back(probe(k, "after", in, true, k > bad ? 4 : 0));
        ev.push_back(probe(k, "after", out, true, poisoned ? 4 : 0));
      }
    }
    int nan = poisoned && (bad_after_probes || !req.probe_plan) ? 4 : 0;
    ev.push_back({{"event", "outputs"}, {"tensors", {stats("output0", nan)}}});
    ev.push_back({{"event", "done"}});
    return ev;
  }

  aoti_bisect::ChildOutput answer(const aoti_bisect::ChildRequest& req) const {
    aoti_bisect::ChildOutput out;
    bool crashed = false;
    out.events = aoti_bisect::Events(run_events(req, crashed));
    out.status = crashed ? killed(11) : exited(0);
    return out;
  }

  // A run over the request's batches in one process (one batch when it
  // names none), as the runner's --batch-list does: batch i (0-based, in
  // this process) runs this model where `fails(i, file)`, a healthy one
  // elsewhere; probes on the last batch only; the loop ends at the first
  // batch that fails.
  aoti_bisect::ChildOutput answer_batches(const aoti_bisect::ChildRequest& req,
                                          const std::function<bool(size_t, const std::string&)>& fails) const {
    std::vector<std::string> files;
    for (const auto& b : req.batches) {
      files.push_back(b.string());
    }
    if (files.empty()) {
      files.push_back("inputs.pt");
    }
    bool framed = files.size() > 1;
    aoti_bisect::ChildOutput out;
    out.events.push_back({{"event", "start"}, {"torch", "2.13.0"}});
    out.status = exited(0);
    for (size_t i = 0; i < files.size(); ++i) {
      if (framed) {
        out.events.push_back({{"event", "batch"}, {"index", i}, {"of", files.size()}, {"file", files[i]}});
      }
      FakeModel m = *this;
      if (!fails(i, files[i])) {
        m.bad = 0;
      }
      aoti_bisect::ChildRequest r = req;
      if (i + 1 < files.size()) {
        r.probe_plan.reset();
      }
      bool crashed = false;
      std::vector<json> ev = m.run_events(r, crashed);
      for (size_t e = 1; e < ev.size(); ++e) {  // its own start and done are the process's
        if (ev[e]["event"] != "done") {
          out.events.push_back(ev[e]);
        }
      }
      if (crashed) {
        out.status = killed(11);
        return out;
      }
      bool bad = m.bad > 0 && (m.bad_after_probes || !r.probe_plan);
      if (framed) {
        out.events.push_back({{"event", "batch_end"}, {"index", i}, {"nonfinite", bad}});
      }
      if (bad && !req.keep_going) {
        break;
      }
    }
    out.events.push_back({{"event", "done"}});
    return out;
  }

  static json probe(int site, const std::string& phase, const std::string& tensor, bool initialized, int nan) {
    return {{"event", "probe"},
            {"site", site},
            {"kernel", "k" + std::to_string(site)},
            {"phase", phase},
            {"tensor", tensor},
            {"initialized", initialized},
            {"stats", stats(tensor, nan)}};
  }
};

}  // namespace fake
