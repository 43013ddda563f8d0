#pragma once
// The replay folder's fixed files (repro/replay.hpp), kept as they are
// written under lib/repro/resources/ and built into the binary by
// lib/CMakeLists.txt (a generated .cpp holds each as a raw string literal).

#include <string_view>

namespace aoti_bisect {

// resources/replay_host.h: what a generated driver.cpp calls around the call.
std::string_view replay_host_header();
// resources/replay_host.cpp: its definitions (LibTorch's heavy headers),
// compiled once per torch and compiler by the script.
std::string_view replay_host_source();
// resources/replay.sh: OUT/repro/replay, with @NAME@ placeholders.
std::string_view replay_script_template();
// resources/intermediate_probes.h: the probes of kernel.traced.cpp
// (repro/intermediates.hpp).
std::string_view intermediate_probes_header();

}  // namespace aoti_bisect
