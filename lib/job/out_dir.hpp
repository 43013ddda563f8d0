#pragma once
// The output folder of a run: one run at a time (a lock file the kernel
// releases even when the run is SIGKILLed), work folders of dead runs
// removed, an earlier run's files kept apart in previous/.

#include <filesystem>
#include <string>
#include <vector>

namespace aoti_bisect {

// The names a run writes into its folder (all of them move to previous/).
const std::vector<std::string>& run_products();

class OutDir {
 public:
  // Creates the folder and takes its lock. Throws Error(usage) with one line
  // when the folder cannot be created or written (read-only, no permission),
  // or when another live run holds it (naming that run's pid). Then removes
  // the `.work-<pid>` folders that dead runs left, and moves an earlier run's
  // products to `previous/` (replacing an older `previous/`); notes() says
  // what it did.
  // `products` are the names moved to previous/ (a run's by default).
  explicit OutDir(const std::filesystem::path& dir, const std::vector<std::string>& products = run_products());
  ~OutDir();
  OutDir(const OutDir&) = delete;
  OutDir& operator=(const OutDir&) = delete;

  const std::vector<std::string>& notes() const { return m_notes; }

 private:
  int m_fd = -1;
  std::filesystem::path m_lock;  // removed when the run ends: no file is left behind
  std::vector<std::string> m_notes;
};

}  // namespace aoti_bisect
