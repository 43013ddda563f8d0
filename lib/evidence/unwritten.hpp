#pragma once
// The evidence of the poison variant (AOTI_BISECT_POISON=1): memory no
// kernel wrote still holds the exact signaling NaN (or integer maximum) it
// was allocated with, which the probes count (TensorStats::unwritten). Those
// NaN are not values any kernel made: the introducer and the reach walk
// leave them out, and the culprit that reads them says so.

#include <cstdint>
#include <optional>
#include <string>

#include "evidence/evidence.hpp"

namespace aoti_bisect {

// The NaN of `t` that are not the poison's: NaN a kernel computed.
int64_t made_nan(const TensorStats& t);

// The trace with the poison's NaN taken out of every count; `unwritten` kept.
RunTrace without_poison(const RunTrace& trace);

// A tensor of the site that holds memory no kernel wrote: one written
// earlier that still held poison before the launch (`before`), one no kernel
// ever wrote that the site only read (`never_written`), else one that still
// holds it after the launch.
struct UnwrittenRead {
  const ProbeStats* probe = nullptr;
  bool before = false;
  bool never_written = false;
};
std::optional<UnwrittenRead> unwritten_read(const SiteTrace& s);

// "reads memory no kernel wrote: 16384 of the 65536 elements of buf0
// (1024x64 float32) it reads still hold the poison they were allocated with"
std::string unwritten_text(const UnwrittenRead& u);

}  // namespace aoti_bisect
