// The traced replay's report read back (lib/evidence/intermediates.hpp): the
// `AOTI_TRACE {...}` lines the probes of repro/intermediates print.

#include <string>

#include <doctest/doctest.h>

#include "evidence/intermediates.hpp"

using namespace aoti_bisect;

TEST_SUITE_BEGIN("evidence/intermediates");

TEST_CASE("read_intermediate_trace: the replay's lines, NaN first, in the kernel's order") {
  std::string out =
      "cpp_fused_div_2: buf7 has 12 NaN after the call, inputs finite: reproduces\n"
      "intermediate: tmp9 = nan at x0=3 ...\n"
      "AOTI_TRACE {\"kind\": \"inf\", \"statement\": 1, \"target\": \"tmp8\", \"text\": \"tmp8 = 1 / tmp7\", "
      "\"value\": \"inf\", \"loops\": [[\"x0\", 3]], \"lane\": 0, \"lanes\": 1, \"vector_loop\": -1, "
      "\"operands\": [[\"tmp7\", \"0\"]], \"count\": 1, \"output\": null}\n"
      "AOTI_TRACE {\"kind\": \"nan\", \"statement\": 4, \"target\": \"tmp9\", \"text\": \"tmp9 = tmp5 / tmp8\", "
      "\"value\": \"nan\", \"loops\": [[\"x0\", 3], [\"x1\", 12]], \"lane\": 12, \"lanes\": 16, "
      "\"vector_loop\": 1, \"operands\": [[\"tmp5\", \"0\"], [\"tmp8\", \"0\"]], \"count\": 16, "
      "\"output\": {\"tensor\": \"buf7\", \"index\": [3, 12]}}\n"
      "AOTI_TRACE {\"kind\": \"nan\", \"statement\": 2, \"target\": \"tmp6\", \"text\": \"tmp6 = tmp4 * tmp8\", "
      "\"value\": \"nan\", \"loops\": [], \"lane\": 0, \"lanes\": 1, \"vector_loop\": -1, "
      "\"operands\": [[\"tmp4\", \"0\"], [\"tmp8\", \"inf\"]], \"count\": 2, \"output\": null}\n"
      "AOTI_TRACE_END {\"statements\": 7}\n";
  IntermediateTrace t = read_intermediate_trace(out);
  CHECK(t.ran);
  CHECK(t.statements == 7);
  REQUIRE(t.hits.size() == 3);
  // NaN: statement 2 comes before statement 4, and it made NaN of the Inf
  // statement 1 made from a finite operand: both, the Inf's first.
  auto nan = introduction(t, true);
  REQUIRE(nan.size() == 2);
  CHECK(nan[0]->text == "tmp8 = 1 / tmp7");
  CHECK(nan[1]->target == "tmp6");
  auto inf = introduction(t, false);
  REQUIRE(inf.size() == 1);
  CHECK(inf[0]->text == "tmp8 = 1 / tmp7");
  CHECK(t.hits[1].element == std::vector<std::pair<std::string, int64_t>>{{"x0", 3}, {"x1", 12}});
  CHECK(t.hits[1].output_tensor == "buf7");
  CHECK(t.hits[1].output_index == std::vector<int64_t>{3, 12});
  CHECK(t.hits[1].operands[1] == std::pair<std::string, std::string>{"tmp8", "0"});
  // No end line: the replay did not get to its report.
  CHECK_FALSE(read_intermediate_trace("replay: cannot run: no C++ compiler\n").ran);
}

TEST_SUITE_END();
