#pragma once
// Running the children of a job through the ChildRunner seam: each finished
// run is classified and recorded (report.runs, progress, reports on disk).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "classify/batch_runs.hpp"
#include "classify/classify.hpp"
#include "harness/children.hpp"
#include "harness/recorder.hpp"

namespace aoti_bisect {

struct ChildResult {
  ExitStatus status;
  Classification cls;             // of the last batch it ran
  std::vector<BatchRun> batches;  // a run over several batches: each one that began
  Events events;                  // as one run of its last batch (classify/batch_runs.hpp)
  std::string stdout_text;        // with ChildRequest::keep_stdout
  bool finished = false;          // false: interrupted (not recorded)
};

// A finished run of the kernel search, kept without its events: the flag
// matrix counts those made in its baseline environment toward its repeats.
struct SearchRun {
  ChildRequest request;
  ChildResult result;
};

class Runs {
 public:
  Runs(ChildRunner& children, Recorder& recorder) : m_children(children), m_recorder(recorder) {}

  // Runs one child to the end and records it.
  ChildResult run(const ChildRequest& request);

  // Runs the requests with up to `jobs` children at once; results in request
  // order. Returns false when interrupted. After a run that could not test
  // or failed internally, the others are stopped (their results stay
  // unfinished) and it returns true.
  bool run_all(const std::vector<ChildRequest>& requests, int jobs, std::vector<ChildResult>& results);

  // The search's finished runs so far, in order (ChildRequest::group "search").
  const std::vector<SearchRun>& search_runs() const { return m_search_runs; }
  // The number the search's next run takes in its id (bisect.N.purpose,
  // guide.N.range): after every search run this job started, whichever
  // search or source started it, so that no two runs share an id.
  int next_search_number() const { return m_search_started + 1; }

 private:
  ChildResult record(const ChildRequest& request, ChildOutput output);

  ChildRunner& m_children;
  Recorder& m_recorder;
  std::vector<SearchRun> m_search_runs;
  int m_search_started = 0;
};

}  // namespace aoti_bisect
