#pragma once
// Where a culprit's bad input came from: the inputs already bad before a
// launch, the site (or graph input) that produced one, and the walk back
// past sites that only passed bad values on.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "evidence/evidence.hpp"

namespace aoti_bisect {

// Among a site's written inputs, one that was already bad before its launch
// (non-finite, or an integer index outside `bound`, or negative or beyond the
// int32 range when no bound is known): its name and why.
std::optional<std::pair<std::string, std::string>> bad_input(const SiteTrace& s, bool flags,
                                                             std::optional<int64_t> bound);

// Where a culprit's input `tensor` came from: a graph input, or the last
// site before `site` in `history` that touched it. `why` follows its name.
Producer producer_of(const std::string& tensor, const std::string& why, int site, const RunTrace& history,
                     const WrapperInfo& wrapper);

// The producer of bad values, followed back: while the site `p` names only
// passed on what one of its inputs already held (in `probed`, a run with
// statistics of the sites before the culprit: NaN/Inf from NaN/Inf, an
// out-of-range index whose extreme is its input's), the producer is that
// input's. A site whose bad values differ from its inputs' (an index
// clamped, then scaled past the bound) made them: the walk stops there.
Producer walk_producer_back(Producer p, std::optional<int64_t> bound, const RunTrace& probed, const RunTrace& history,
                            const WrapperInfo& wrapper);

}  // namespace aoti_bisect
