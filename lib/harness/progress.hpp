#pragma once
// What a job tells the person watching (stderr). Implemented in apps/.

#include <string>

#include "classify/outcome.hpp"

namespace aoti_bisect {

class Progress {
 public:
  virtual ~Progress() = default;
  virtual void phase(const std::string& name, const std::string& detail) = 0;
  virtual void run_started(const std::string& id, int done, int total) = 0;
  virtual void run_finished(const std::string& id, OutcomeKind kind, const std::string& exit, double seconds, int done,
                            int total) = 0;
  virtual void note(const std::string& text) = 0;
  // A run over several batches is at batch `index` (0-based) of `of`.
  virtual void batch(const std::string& run_id, int index, int of, const std::string& file) {
    (void)run_id, (void)index, (void)of, (void)file;
  }
};

}  // namespace aoti_bisect
