#pragma once
// The program's stderr passed through to ours, its tail kept for the error
// lines: a named pipe the program writes and a thread reads
// (`aoti-bisect capture`).

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>

namespace aoti_bisect {

class StderrTee {
 public:
  // Makes the pipe at `fifo` and starts reading it (the program's open of
  // it for writing waits for this reader).
  explicit StderrTee(std::filesystem::path fifo);
  ~StderrTee();
  const std::filesystem::path& path() const { return m_fifo; }
  // After the program ended: what is left is read, then the pipe closed
  // (a worker it left behind that holds stderr open is not waited for).
  // The last 64 KiB it wrote.
  std::string finish();

 private:
  void pump();

  std::filesystem::path m_fifo;
  std::thread m_thread;
  std::atomic<bool> m_done{false};
  std::string m_tail;
};

}  // namespace aoti_bisect
