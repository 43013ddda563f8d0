// Config errors stay one line whatever the file holds (found by the fuzz
// ctest): control characters in the text are written as escapes.

#include <string>

#include <doctest/doctest.h>

#include "common/error.hpp"
#include "config/config.hpp"

using namespace aoti_bisect;
using namespace std::string_literals;

namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_user_config(yaml, "c.yaml");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_SUITE_BEGIN("config");

TEST_CASE("parse_user_config: a key with a newline in it is named on one line") {
  CHECK(error_of("\"rep\\neats\": 2\n").find("c.yaml:1:1: error: unknown key 'rep\\neats'") == 0);
}

TEST_CASE("parse_user_config: yaml-cpp's own messages quoting a control character stay one line") {
  // The fuzz ctest's input, cut down: a NUL after a key.
  std::string e = error_of("repeats:\x80\x00\ntimeout: 60\n"s);
  CHECK(e.find("c.yaml:") == 0);
  CHECK(e.find('\n') == std::string::npos);
}
