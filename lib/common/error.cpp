// The exit code each kind of Error ends the tool with.

#include "common/error.hpp"

namespace aoti_bisect {

ExitCode exit_code_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage: return ExitCode::usage;
    case ErrorKind::cannot_test: return ExitCode::cannot_test;
    case ErrorKind::internal: return ExitCode::internal;
    case ErrorKind::interrupted: return ExitCode::interrupted;
  }
  return ExitCode::internal;
}

}  // namespace aoti_bisect
