#pragma once
// The steady clock in seconds (CLOCK_MONOTONIC): run times, event times,
// phase times. One definition for the driver and the runner.

#include <chrono>

namespace aoti_bisect {

inline double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace aoti_bisect
