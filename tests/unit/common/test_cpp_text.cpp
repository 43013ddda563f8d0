#include <doctest/doctest.h>

#include "common/cpp_text.hpp"

using namespace aoti_bisect::cpp_text;

TEST_SUITE_BEGIN("common/cpp_text");

TEST_CASE("closing_bracket: literals and comments never count") {
  std::string s = R"(f(a, g(b), "x)(", ')', '(', c[1]) tail)";
  CHECK(closing_bracket(s, 1) == s.find(" tail") - 1);
  CHECK(after_closing_bracket(s, 1) == s.find(" tail"));
  std::string with_comment = "{ // it's a } here\n  x = 1; /* } */ }";
  CHECK(closing_bracket(with_comment, 0) == with_comment.size() - 1);
  // The wrapper's call spec: a raw string full of quotes and brackets.
  std::string raw = R"x(init(R"([1, {"type": "builtins.tuple"}])", 2) end)x";
  CHECK(closing_bracket(raw, 4) == raw.find(" end") - 1);
  std::string escaped = R"x(p("a\")", 1))x";
  CHECK(closing_bracket(escaped, 1) == escaped.size() - 1);
  CHECK(closing_bracket("(unbalanced", 0) == std::string::npos);
  CHECK(closing_bracket("x", 0) == std::string::npos);  // no bracket there
  CHECK(closing_bracket("[a[0]]", 0) == 5);
}

TEST_CASE("skip_literal_or_comment: where each kind ends") {
  CHECK(skip_literal_or_comment(R"("ab\"c" x)", 0) == 7);
  CHECK(skip_literal_or_comment("'\\n' x", 0) == 4);
  CHECK(skip_literal_or_comment("'a' x", 0) == 3);
  CHECK(skip_literal_or_comment("1'000", 1) == 1);    // a digit separator, no literal
  CHECK(skip_literal_or_comment("// c\nx", 0) == 4);  // up to the newline, not past it
  CHECK(skip_literal_or_comment("/* c */x", 0) == 7);
  CHECK(skip_literal_or_comment("Rx", 0) == 0);
  CHECK(skip_literal_or_comment("abc", 1) == 1);
}

TEST_CASE("find_call: whole identifiers followed by '('") {
  std::string s = "my_kernel_0(a); kernel_0(b);";
  CHECK(find_call(s, "kernel_0") == s.find(" kernel_0") + 1);
  CHECK(find_call(s, "my_kernel_0") == 0);
  CHECK(find_call(s, "kernel_1") == std::string::npos);
}

TEST_CASE("without_comments keeps literals and line numbers") {
  CHECK(without_comments("a; // x \"q\"\nb;") == "a; \nb;");
  CHECK(without_comments("a /* 1\n2 */ b") == "a \n b");
  CHECK(without_comments("a /* x */ b") == "a   b");
  CHECK(without_comments("s = \"// not a comment\";") == "s = \"// not a comment\";");
}

TEST_CASE("split_lines: a trailing newline gives a last empty line") {
  auto v = split_lines("a\n\nb\n");
  REQUIRE(v.size() == 4);
  CHECK(v[0] == "a");
  CHECK(v[1].empty());
  CHECK(v[2] == "b");
  CHECK(v[3].empty());
  CHECK(split_lines_copy("x") == std::vector<std::string>{"x"});
  CHECK(is_ident_char('_'));
  CHECK_FALSE(is_ident_char('-'));
}

TEST_SUITE_END();
