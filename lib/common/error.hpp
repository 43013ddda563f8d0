#pragma once
// One error type for everything the user can be told about. Library code
// throws it; apps/ catches it once, prints "aoti-bisect: error: <message>"
// and exits with the code of its kind.

#include <stdexcept>
#include <string>

namespace aoti_bisect {

// The exit-code contract (README.md "Exit codes", design.md "Contracts").
enum class ExitCode : int {
  clean = 0,          // no failure reproduced
  isolated = 1,       // failure reproduced and isolated
  usage = 2,          // usage or config error
  not_isolated = 3,   // failure reproduced, not isolated
  cannot_test = 4,    // unreadable package, inputs or reference; inputs that do not fit
  internal = 5,       // internal error
  interrupted = 130,  // Ctrl-C; the partial report is written
};

enum class ErrorKind {
  usage,        // bad command line or config file -> 2
  cannot_test,  // the things to test cannot be used -> 4
  internal,     // a bug or an environment failure of the tool itself -> 5
  interrupted,  // SIGINT, SIGTERM or SIGHUP stopped a child or helper -> 130
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}
  ErrorKind kind() const { return m_kind; }

 private:
  ErrorKind m_kind;
};

// A config file's error, located ("FILE:LINE:COL: error: ..."): a usage
// error that, like every config error, leaves no report, even when it is
// found once the package was read (a variant named like the profile's).
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error(ErrorKind::usage, message) {}
};

ExitCode exit_code_of(ErrorKind kind);

}  // namespace aoti_bisect
