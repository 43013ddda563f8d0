#pragma once
// One result type for every step of `aoti-bisect run` that may end the job.
// A step returns Step<T>: the value it hands on, or the Stop that ends the
// job; Step<> when it hands nothing on. Job::run calls the phases in order
// and ends the job at the first Stop (job.cpp: the verdict, the signature,
// the core dump, the package's hash); no phase ends the job itself.

#include <string>
#include <utility>
#include <variant>

#include "common/error.hpp"
#include "report/report.hpp"

namespace aoti_bisect {

// A step that ends the job, and how.
struct Stop {
  enum class How {
    fail,         // the job cannot go on: `message` is the reason and the error line
    finish,       // a verdict reached: `message` is its reason
    interrupted,  // Ctrl-C or SIGTERM: `message` says where
  };
  Verdict verdict = Verdict::could_not_test;
  std::string message;
  How how = How::fail;
};

// What makes one.
// An error the job cannot go on after, the one mapping from an error to a
// verdict: internal_error for the tool's own, interrupted for a signal's,
// could_not_test for the rest.
inline Stop stop_of(const Error& e) {
  switch (e.kind()) {
    case ErrorKind::internal: return {Verdict::internal_error, e.what()};
    case ErrorKind::interrupted: return {Verdict::interrupted, e.what()};  // the job says where (Job::end)
    default: return {Verdict::could_not_test, e.what()};
  }
}
// A verdict reached, `reason` its reason.
inline Stop finished(Verdict verdict, std::string reason) {
  return {verdict, std::move(reason), Stop::How::finish};
}
// An interrupt, `where` saying during what ("during the baseline run").
inline Stop interrupted_during(std::string where) {
  return {Verdict::interrupted, std::move(where), Stop::How::interrupted};
}

// What a step that hands nothing on returns when the job goes on.
struct Go {};

template <class T = Go>
class [[nodiscard]] Step {
 public:
  Step(T value) : m_v(std::move(value)) {}   // NOLINT(google-explicit-constructor): `return value;`
  Step(Stop stop) : m_v(std::move(stop)) {}  // NOLINT(google-explicit-constructor): `return stop;`

  bool stopped() const { return std::holds_alternative<Stop>(m_v); }
  const Stop& stop() const { return std::get<Stop>(m_v); }
  T& value() { return std::get<T>(m_v); }
  const T& value() const { return std::get<T>(m_v); }
  T* operator->() { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Stop> m_v;
};

}  // namespace aoti_bisect
