#include <doctest/doctest.h>

#include "common/text.hpp"

using namespace aoti_bisect;

TEST_SUITE_BEGIN("common/text");

TEST_CASE("last_nonempty_line: the last line with text, trimmed") {
  CHECK(last_nonempty_line("") == "");
  CHECK(last_nonempty_line("\n \t\n") == "");
  CHECK(last_nonempty_line("one") == "one");
  CHECK(last_nonempty_line("Traceback\n  RuntimeError: boom \r\n\n  \n") == "RuntimeError: boom");
  CHECK(last_nonempty_line("2.13.0\n") == "2.13.0");
}

TEST_SUITE_END();
