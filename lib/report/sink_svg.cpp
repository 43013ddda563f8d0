// report.svg (see sink_svg.hpp). Coordinates are in SVG user units, one a
// CSS pixel at the natural size: k_width wide, as tall as the content.

#include "report/sink_svg.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/files.hpp"
#include "common/text.hpp"

namespace aoti_bisect {

namespace {

constexpr double k_width = 1000;
constexpr double k_left = 64;  // row numbers, step numbers and the graph-input mark
constexpr double k_right = 16;
constexpr double k_plot = k_width - k_left - k_right;
constexpr double k_cell_h = 14;
constexpr double k_mark_h = 10;  // above each strip row: room for the pointers
constexpr double k_bar_h = 9;
constexpr size_t k_max_steps_shown = 40;     // the first and last 20 beyond that
constexpr size_t k_max_titled_cells = 5000;  // a tooltip per cell up to this many
constexpr int k_max_rows = 50;

struct Swatch {
  std::string_view name;
  std::string_view fill;
};
constexpr Swatch k_kinds[] = {{"cpp", "#4e79a7"}, {"triton", "#f28e2b"}, {"extern", "#b07aa1"}};
constexpr std::string_view k_other_kind = "#bab0ac";
constexpr std::string_view k_not_run = "#e8e8e8";  // a slot the steps cover where no site ran
constexpr Swatch k_verdicts[] = {
    {"reproduces", "#e15759"}, {"clean", "#59a14f"}, {"inconclusive", "#edc948"}, {"error", "#79706e"}};
constexpr std::string_view k_other_verdict = "#d3d3d3";

std::string_view fill_of(const Swatch* table, size_t n, const std::string& name, std::string_view other) {
  for (size_t i = 0; i < n; ++i) {
    if (table[i].name == name) {
      return table[i].fill;
    }
  }
  return other;
}
std::string_view kind_fill(const std::string& kind) {
  return fill_of(k_kinds, 3, kind, k_other_kind);
}
std::string_view verdict_fill(const std::string& v) {
  return fill_of(k_verdicts, 4, v, k_other_verdict);
}

// Valid UTF-8 of characters XML 1.0 allows, whatever the bytes (one bad
// byte would make the whole file unreadable): anything else becomes '?'.
std::string valid_utf8(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; ok && k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc >> 6) == 0x2;
      cp = (cp << 6) | (cc & 0x3f);
    }
    constexpr char32_t k_min[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= k_min[len] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) && cp != 0xfffe && cp != 0xffff;
    out += ok ? s.substr(i, len) : "?";
    i += ok ? len : 1;
  }
  return out;
}

// Every text drawn: redacted like every report, then escaped for XML.
std::string esc(const std::string& s) {
  return xml_escape(valid_utf8(redact_paths(s)));
}

// A coordinate to a tenth: "14", "123.4".
std::string num(double v) {
  return fmt::format("{}", std::round(v * 10) / 10 + 0.0);
}

void rect(std::string& out, double x, double y, double w, double h, std::string_view fill,
          std::string_view extra = "") {
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}/>\n", num(x), num(y), num(w),
                     num(h), fill, extra);
}

void text(std::string& out, double x, double y, const std::string& s, std::string_view extra = "") {
  out += fmt::format("<text x=\"{}\" y=\"{}\"{}>{}</text>\n", num(x), num(y), extra, esc(s));
}

// A pointer down onto a cell whose top edge is at `y`.
void pointer(std::string& out, double cx, double y, std::string_view fill) {
  out += fmt::format("<polygon points=\"{},{} {},{} {},{}\" fill=\"{}\"/>\n", num(cx - 5), num(y - 9), num(cx + 5),
                     num(y - 9), num(cx), num(y - 2), fill);
}

// Where the strip puts call site K (1-based): `cols` cells a row.
struct Strip {
  int slots = 1;  // the largest call-site number shown
  int cols = 1;
  int rows = 1;
  double cell_w = 1;
  double top = 0;
  double row_h = k_mark_h + k_cell_h + 4;
  double x(int k) const { return k_left + ((k - 1) % cols) * cell_w; }
  double y(int k) const { return top + ((k - 1) / cols) * row_h + k_mark_h; }
  double bottom() const { return top + rows * row_h; }
};

Strip strip_layout(int slots, double top) {
  Strip s;
  s.slots = std::max(slots, 1);
  s.top = top;
  if (s.slots <= k_svg_single_row_max) {
    s.cols = s.slots;
  } else {
    s.cols = 1000;
    for (int cols : {100, 200, 500}) {
      if ((s.slots + cols - 1) / cols <= k_max_rows) {
        s.cols = cols;
        break;
      }
    }
  }
  s.rows = (s.slots + s.cols - 1) / s.cols;
  s.cell_w = k_plot / s.cols;
  return s;
}

// The steps' axis: call sites 1..slots over the plot's width, one row.
double axis_x(const Strip& s, double k) {
  return k_left + (k - 1) * k_plot / s.slots;
}

struct Marks {
  std::optional<int> culprit;
  std::optional<int> producer;  // a call site
  bool graph_input = false;     // the producer is a graph input
};

Marks marks_of(const Report& r) {
  Marks m;
  if (r.culprit) {
    m.culprit = r.culprit->call_index;
    if (r.culprit->producer) {
      m.producer = r.culprit->producer->call_index;
      m.graph_input = !m.producer.has_value();
    }
  }
  return m;
}

std::string headline(const Report& r) {
  std::string out = "aoti-bisect: ";
  if (r.failure) {
    out += std::string(outcome_name(r.failure->kind)) + ", ";
  }
  out += std::string(verdict_name(r.verdict));
  if (!r.package.model.empty()) {
    out += " (model " + r.package.model + ")";
  }
  return out;
}

std::string result_line(const Report& r, const Bisection& b) {
  if (r.culprit) {
    const Culprit& c = *r.culprit;
    std::string out = fmt::format("Culprit: call site {} (of {} that ran), {} ({})", c.call_index, b.sites.size(),
                                  c.kernel, c.kind.empty() ? "?" : c.kind);
    if (c.producer) {
      out += c.producer->call_index ? fmt::format("; its input {} was made by call site {}, {}", c.producer->tensor,
                                                  *c.producer->call_index, c.producer->kernel)
                                    : fmt::format("; its input {} is a graph input", c.producer->tensor);
    }
    return out;
  }
  if (b.status == k_blind_spot_status) {
    return "No culprit: call sites without probes ran before the first bad probed site (a blind spot)";
  }
  return "No culprit: the search ended " + (b.status.empty() ? std::string("early") : b.status);
}

void legend(std::string& out, double y) {
  double x = k_left;
  auto item = [&](std::string_view fill, const std::string& name, bool outline) {
    rect(out, x, y - 9, 12, 10, outline ? "none" : fill,
         outline ? fmt::format(" stroke=\"{}\" stroke-width=\"2.5\"", fill) : "");
    text(out, x + 16, y, name);
    x += 22 + 6.5 * static_cast<double>(name.size()) + 10;
  };
  text(out, x, y, "kind:", " font-weight=\"bold\"");
  x += 40;
  for (const auto& k : k_kinds) {
    item(k.fill, std::string(k.name), false);
  }
  item(k_not_run, "not run", false);
  x += 10;
  text(out, x, y, "step verdict:", " font-weight=\"bold\"");
  x += 92;
  for (const auto& v : k_verdicts) {
    item(v.fill, std::string(v.name), false);
  }
  x += 10;
  item(k_svg_culprit_colour, "culprit", true);
  item(k_svg_producer_colour, "producer", true);
}

// The strip: one cell per call site that ran; returns the y below it.
double strip(std::string& out, const Bisection& b, const Strip& s, const Marks& m) {
  bool titled = b.sites.size() <= k_max_titled_cells;
  out += "<g id=\"strip\">\n";
  for (int row = 0; row < s.rows; ++row) {
    if (s.rows > 1) {
      text(out, k_left - 18, s.top + row * s.row_h + k_mark_h + k_cell_h - 3, std::to_string(row * s.cols + 1),
           " text-anchor=\"end\" fill=\"#555\"");
    }
  }
  double gap = s.cell_w >= 4 ? 1 : 0;  // a hairline between cells while they are wide enough
  std::vector<bool> ran(static_cast<size_t>(s.slots) + 1, false);
  for (const auto& site : b.sites) {
    ran[static_cast<size_t>(std::clamp(site.index, 0, s.slots))] = true;
  }
  for (int k = 1; k <= s.slots; ++k) {
    if (!ran[static_cast<size_t>(k)]) {
      rect(out, s.x(k), s.y(k), std::max(s.cell_w - gap, 0.5), k_cell_h, k_not_run);
    }
  }
  for (const auto& site : b.sites) {
    if (site.index < 1 || site.index > s.slots) {
      continue;
    }
    out += fmt::format("<rect id=\"site-{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"", site.index,
                       num(s.x(site.index)), num(s.y(site.index)), num(std::max(s.cell_w - gap, 0.5)), num(k_cell_h),
                       kind_fill(site.kind));
    out += titled ? fmt::format("><title>call site {}: {} ({})</title></rect>\n", site.index, esc(site.kernel),
                                esc(site.kind))
                  : "/>\n";
  }
  out += "</g>\n";
  auto mark = [&](const char* id, int k, std::string_view colour) {
    if (k < 1 || k > s.slots) {
      return;
    }
    out += fmt::format("<g id=\"{}\">\n", id);
    rect(out, s.x(k) - 1.5, s.y(k) - 1.5, std::max(s.cell_w, 1.0) + 2, k_cell_h + 3, "none",
         fmt::format(" stroke=\"{}\" stroke-width=\"3\"", colour));
    pointer(out, s.x(k) + s.cell_w / 2, s.y(k) - 1.5, colour);
    out += "</g>\n";
  };
  if (m.producer) {
    mark("producer", *m.producer, k_svg_producer_colour);
  }
  if (m.graph_input) {
    out += "<g id=\"graph-input\">\n";
    rect(out, k_left - 14, s.y(1), 10, k_cell_h, k_svg_producer_colour, "");
    text(out, k_left - 9, s.y(1) - 2, "in", " text-anchor=\"middle\" font-size=\"9\" fill=\"#555\"");
    out += "</g>\n";
  }
  if (m.culprit) {
    mark("culprit", *m.culprit, k_svg_culprit_colour);
  }
  return s.bottom();
}

// What the marks stand for, in words, under the strip.
double mark_notes(std::string& out, const Report& r, double y) {
  if (!r.culprit) {
    return y;
  }
  const Culprit& c = *r.culprit;
  pointer(out, k_left + 5, y, k_svg_culprit_colour);
  text(out, k_left + 16, y - 1,
       fmt::format("culprit: call site {}, {} ({}){}", c.call_index, c.kernel, c.kind,
                   c.phase == "launch" ? ", failed inside its launch" : ""));
  y += 16;
  if (c.producer) {
    const Producer& p = *c.producer;
    pointer(out, k_left + 5, y, k_svg_producer_colour);
    text(out, k_left + 16, y - 1,
         p.call_index ? fmt::format("producer: call site {}, {}, made {}", *p.call_index, p.kernel, p.tensor)
                      : fmt::format("producer: the graph input {} (marked \"in\")", p.tensor));
    y += 16;
  }
  return y;
}

// The strip again on the steps' axis, one row, when the strip is wrapped:
// runs of one kind merged, and with more sites than pixels, each pixel's
// column in the kind most of its sites have.
void overview(std::string& out, const Bisection& b, const Strip& s, double y) {
  int columns = std::min(s.slots, static_cast<int>(k_plot));
  std::vector<std::string> kinds(static_cast<size_t>(columns));
  std::vector<std::map<std::string, int>> votes(static_cast<size_t>(columns));
  for (const auto& site : b.sites) {
    if (site.index >= 1 && site.index <= s.slots) {
      int c = static_cast<int>(static_cast<long long>(site.index - 1) * columns / s.slots);
      votes[static_cast<size_t>(c)][site.kind] += 1;
    }
  }
  for (size_t c = 0; c < votes.size(); ++c) {
    int most = 0;
    for (const auto& [kind, n] : votes[c]) {
      if (n > most) {
        most = n;
        kinds[c] = kind;
      }
    }
  }
  double w = k_plot / columns;
  for (size_t i = 0; i < kinds.size();) {
    size_t j = i + 1;
    while (j < kinds.size() && kinds[j] == kinds[i] && !votes[j].empty()) {
      ++j;
    }
    if (!votes[i].empty()) {
      rect(out, k_left + static_cast<double>(i) * w, y, static_cast<double>(j - i) * w, 6, kind_fill(kinds[i]));
    }
    i = j;
  }
}

std::string step_label(size_t i, const BisectionStep& st) {
  std::string range =
      st.lo == st.hi ? fmt::format("call site {}", st.lo) : fmt::format("call sites {}–{}", st.lo, st.hi);
  std::string runs = st.runs > 1 ? fmt::format(" ({} of {} runs agree)", st.agreeing, st.runs) : "";
  return fmt::format("{}. {} {}: {}{}", i + 1, st.purpose, range, st.verdict, runs);
}

// One bar per step in order (the first and last k_max_steps_shown / 2 when
// there are more); returns the y below them.
double steps(std::string& out, const Bisection& b, const Strip& s, double y) {
  size_t n = b.steps.size();
  size_t half = k_max_steps_shown / 2;
  out += "<g id=\"steps\">\n";
  for (size_t i = 0; i < n; ++i) {
    if (n > k_max_steps_shown && i == half) {
      text(out, k_left, y + 10, fmt::format("… {} more steps (report.md and report.json list them)", n - 2 * half),
           " fill=\"#555\"");
      y += 18;
      i = n - half;
    }
    const BisectionStep& st = b.steps[i];
    double lo = std::clamp<double>(std::min(st.lo, st.hi), 1, s.slots);
    double hi = std::clamp<double>(std::max(st.lo, st.hi), 1, s.slots);
    double x0 = axis_x(s, lo);
    double x1 = axis_x(s, hi + 1);
    text(out, k_left, y + 10, step_label(i, st));
    out += fmt::format("<rect id=\"step-{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">", i + 1, num(x0),
                       num(y + 13), num(std::max(x1 - x0, 3.0)), num(k_bar_h), verdict_fill(st.verdict));
    out += fmt::format("<title>{}</title></rect>\n", esc(step_label(i, st)));
    y += 13 + k_bar_h + 6;
  }
  out += "</g>\n";
  return y;
}

// Numbered ticks on the steps' axis: at most about ten, on round numbers.
void ticks(std::string& out, const Strip& s, double y) {
  int step = 1;
  for (int m = 1; step * 10 < s.slots; m *= 10) {
    for (int f : {1, 2, 5}) {
      step = f * m;
      if (step * 10 >= s.slots) {
        break;
      }
    }
  }
  out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#999\"/>\n", num(k_left), num(y),
                     num(k_left + k_plot), num(y));
  for (int k = 1; k <= s.slots; k = (k == 1 && step > 1) ? step : k + step) {
    double x = (axis_x(s, k) + axis_x(s, k + 1)) / 2;
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#999\"/>\n", num(x), num(y), num(x),
                       num(y + 4));
    text(out, x, y + 15, std::to_string(k), " text-anchor=\"middle\" fill=\"#555\"");
  }
}

// A vertical line through the steps at call site K.
void guide_line(std::string& out, const Strip& s, int k, double top, double bottom, std::string_view colour) {
  if (k < 1 || k > s.slots) {
    return;
  }
  double x = (axis_x(s, k) + axis_x(s, k + 1)) / 2;
  out += fmt::format(
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>\n",
      num(x), num(top), num(x), num(bottom), colour);
}

}  // namespace

std::string report_to_svg(const Report& r) {
  if (!r.bisection || r.bisection->sites.empty()) {
    return "";
  }
  const Bisection& b = *r.bisection;
  Marks m = marks_of(r);
  int slots = 0;
  for (const auto& site : b.sites) {
    slots = std::max(slots, site.index);
  }
  for (const auto& st : b.steps) {
    slots = std::max({slots, st.lo, st.hi});
  }
  slots = std::max({slots, m.culprit.value_or(0), m.producer.value_or(0)});

  std::string body;
  double y = 26;
  text(body, k_left, y, headline(r), " font-size=\"16\" font-weight=\"bold\"");
  y += 20;
  text(body, k_left, y, result_line(r, b), " font-size=\"13\"");
  y += 18;
  std::string how = fmt::format("{} call sites ran, in launch order", b.sites.size());
  if (!b.strategy.empty()) {
    how += fmt::format(" · {} search", b.strategy);
  }
  if (!b.predicate.empty()) {
    how += " for " + b.predicate;
  }
  if (!b.source.empty()) {
    how += ", probes from " + b.source;
  }
  how += fmt::format(" · {} runs", b.runs);
  text(body, k_left, y, how, " fill=\"#555\"");
  y += 22;
  legend(body, y);
  y += 24;
  text(body, k_left, y, "Call sites in launch order (one cell each)", " font-weight=\"bold\"");
  Strip s = strip_layout(slots, y + 4);
  y = strip(body, b, s, m) + 14;
  y = mark_notes(body, r, y);
  if (!b.steps.empty()) {
    y += 8;
    text(body, k_left, y, "Bisection steps, in order: the call sites each one probed", " font-weight=\"bold\"");
    y += 8;
    double top = y;
    if (s.rows > 1) {
      overview(body, b, s, y);
      y += 10;
    }
    size_t under = body.size();  // the guide lines go under the bars
    y = steps(body, b, s, y);
    std::string lines;
    if (m.producer) {
      guide_line(lines, s, *m.producer, top, y, k_svg_producer_colour);
    }
    if (m.culprit) {
      guide_line(lines, s, *m.culprit, top, y, k_svg_culprit_colour);
    }
    body.insert(under, lines);
    ticks(body, s, y + 2);
    y += 22;
  }
  double height = std::ceil(y + 10);

  std::string desc = result_line(r, b) + fmt::format(". {} bisection steps.", b.steps.size());
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" "
      "aria-labelledby=\"svg-title svg-desc\" font-family=\"sans-serif\" font-size=\"11\" fill=\"#222\">\n",
      k_width, height);
  out +=
      fmt::format("<title id=\"svg-title\">{}</title>\n<desc id=\"svg-desc\">{}</desc>\n", esc(headline(r)), esc(desc));
  rect(out, 0, 0, k_width, height, "#ffffff");
  return out + body + "</svg>\n";
}

}  // namespace aoti_bisect
