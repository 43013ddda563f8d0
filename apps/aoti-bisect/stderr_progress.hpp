#pragma once
// Progress on stderr: one redrawn line on a smart terminal, plain lines
// otherwise (pipes, CI, TERM=dumb). Results go to stdout, never here.

#include <map>
#include <string>

#include "job/job.hpp"

namespace aoti_bisect::cli {

class StderrProgress : public Progress {
 public:
  StderrProgress();
  ~StderrProgress() override;
  void phase(const std::string& name, const std::string& detail) override;
  void run_started(const std::string& id, int done, int total) override;
  void run_finished(const std::string& id, OutcomeKind kind, const std::string& exit, double seconds, int done,
                    int total) override;
  void note(const std::string& text) override;
  void batch(const std::string& run_id, int index, int of, const std::string& file) override;
  void finish();  // ends a redrawn line

 private:
  void line(const std::string& text, bool transient);
  bool m_smart = false;
  bool m_color = false;
  bool m_dirty = false;
  int m_started = 0;                     // runs started so far: the next one's number
  std::map<std::string, int> m_numbers;  // run id -> its number
  double m_last_batch_line = -1e9;       // when a plain stderr last got a batch line
};

}  // namespace aoti_bisect::cli
