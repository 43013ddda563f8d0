// The capture library's events read back: each call's status, a death inside
// a call, and the first bad call.

#include <doctest/doctest.h>

#include "capture/capture.hpp"

using namespace aoti_bisect;

namespace {

std::string begin(int call, int nan_in = 0) {
  return "{\"event\":\"begin\",\"call\":" + std::to_string(call) +
         ",\"so\":\"/tmp/aotinductor_x/zero_row_norm/data/aotinductor/model/abc.wrapper.so\","
         "\"inputs\":[{\"dtype\":\"float32\",\"shape\":[8,16],\"device\":0}],\"inputs_nan\":" +
         std::to_string(nan_in) + ",\"inputs_inf\":0,\"kept\":true}\n";
}

std::string end(int call, int code = 0, int nan_out = 0) {
  return "{\"event\":\"end\",\"call\":" + std::to_string(call) + ",\"code\":" + std::to_string(code) +
         ",\"outputs\":[[8,4]],\"outputs_nan\":" + std::to_string(nan_out) + ",\"outputs_inf\":0}\n";
}

}  // namespace

TEST_SUITE_BEGIN("capture");

TEST_CASE("calls read back: ok, NaN from finite inputs, an error, a death inside a call") {
  std::string text = begin(1) + end(1) + begin(2, 3) + end(2, 0, 4) + begin(3) + end(3, 0, 8) + begin(4) +
                     end(4, 1) + begin(5) + "{\"event\":\"end\",\"call\":5,\"co";  // cut short by the death
  auto calls = read_calls(text, 42, 6);
  REQUIRE(calls.size() == 5);
  CHECK(calls[0].status == "ok");
  CHECK(calls[0].inputs[0]["shape"] == nlohmann::json::array({8, 16}));
  CHECK(calls[0].pid == 42);
  CHECK(calls[1].status == "nonfinite");
  CHECK(calls[1].inputs_nan == 3);
  CHECK(calls[2].status == "nonfinite");
  CHECK(calls[2].outputs_nan == 8);
  CHECK(calls[3].status == "error");
  CHECK(calls[3].code == 1);
  CHECK(calls[4].status == "died");
  REQUIRE(calls[4].signal.has_value());
  CHECK(*calls[4].signal == 6);
  // Call 2's NaN came in with its inputs: the first bad call is 3.
  const CapturedCall* bad = first_bad(calls);
  REQUIRE(bad != nullptr);
  CHECK(bad->index == 3);
}

TEST_CASE("no bad call, and a death whose signal is not known") {
  auto ok = read_calls(begin(1) + end(1) + begin(2) + end(2), 7, std::nullopt);
  CHECK(first_bad(ok) == nullptr);
  auto died = read_calls(begin(1) + end(1) + begin(2), 7, std::nullopt);
  REQUIRE(first_bad(died) != nullptr);
  CHECK(first_bad(died)->index == 2);
  CHECK(first_bad(died)->status == "died");
  CHECK_FALSE(first_bad(died)->signal.has_value());
}

TEST_CASE("outputs on a device that could not be copied after the call: an error, and the first bad call") {
  std::string text = begin(1) + end(1) + begin(2) +
                     "{\"event\":\"end\",\"call\":2,\"code\":0,\"outputs\":[[8,4]],\"outputs_nan\":0,"
                     "\"outputs_inf\":0,\"device_error\":true}\n";
  auto calls = read_calls(text, 7, std::nullopt);
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].status == "ok");
  CHECK(calls[1].status == "error");
  CHECK(calls[1].device_error);
  const CapturedCall* bad = first_bad(calls);
  REQUIRE(bad != nullptr);
  CHECK(bad->index == 2);
}
