#pragma once
// report.svg: a picture of the search, beside report.md. The call sites that
// ran, in launch order, as a strip of cells coloured by kind (one row up to
// k_svg_single_row_max sites, then rows of 100, 200, 500 or 1000); under it
// the range each bisection step probed, as a bar coloured by its verdict; the
// culprit and its producer marked on both. One self-contained file: no fonts,
// scripts, stylesheets or URLs; every text is redacted and XML-escaped, and
// no path or tensor value is drawn.
//
// Element ids a reader (or a test) may look for: "site-K" (the cell of call
// site K), "culprit" and "producer" (their marks: a group holding an outline
// and a pointer), "step-I" (the bar of step I, 1-based), "graph-input" (the
// mark of a producer that is a graph input).

#include <string>

#include "report/report.hpp"

namespace aoti_bisect {

inline constexpr const char* k_svg_culprit_colour = "#ff00ff";
inline constexpr const char* k_svg_producer_colour = "#0090d0";
inline constexpr int k_svg_single_row_max = 120;

// The picture, or "" when the report has no call sites to show (no
// bisection yet, or its trace run recorded none).
std::string report_to_svg(const Report& report);

}  // namespace aoti_bisect
