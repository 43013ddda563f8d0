// report.svg: well-formed, one cell per call site, the culprit and producer
// marked on their cells, every text escaped, a sane size for large runs; and
// how report.md, report.json and write_reports carry it.

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "common/files.hpp"
#include "package_fixture.hpp"
#include "report/report.hpp"
#include "report/sink_svg.hpp"
#include "report/sinks.hpp"

using namespace aoti_bisect;
namespace fs = std::filesystem;

namespace {

std::string kind_at(int k) {
  return k % 3 == 0 ? "extern" : k % 3 == 1 ? "cpp" : "triton";
}

std::string kernel_at(int k) {
  if (kind_at(k) == "extern") {
    return "aoti_torch_cpu_addmm_out";
  }
  return (kind_at(k) == "cpp" ? "cpp_fused_add_" : "triton_poi_fused_mul_") + std::to_string(k);
}

// n call sites, a bisection that found the culprit and its producer.
Report svg_report(int n, int culprit, std::optional<int> producer) {
  Report r;
  r.verdict = Verdict::isolated;
  r.failure = Failure{};
  r.failure->kind = OutcomeKind::nonfinite;
  r.package.model = "model";
  Bisection b;
  b.strategy = "bisect";
  b.status = "found";
  b.predicate = "nonfinite";
  b.source = "interpose";
  b.call_sites = n;
  for (int k = 1; k <= n; ++k) {
    b.sites.push_back({k, kernel_at(k), kind_at(k)});
  }
  b.steps.push_back({1, n, "trace", "reproduces", 1, 1, ""});
  int lo = 1;
  int hi = n;
  while (lo < hi) {  // the ranges a bisection for `culprit` probes
    int mid = (lo + hi) / 2;
    bool bad = culprit <= mid;
    b.steps.push_back({1, mid, "bisect", bad ? "reproduces" : "clean", 1, 1, ""});
    (bad ? hi : lo) = bad ? mid : mid + 1;
  }
  b.steps.push_back({culprit, culprit, "confirm", "reproduces", 3, 2, ""});
  b.runs = static_cast<int>(b.steps.size());
  r.bisection = b;
  Culprit c;
  c.call_index = culprit;
  c.kernel = kernel_at(culprit);
  c.kind = kind_at(culprit);
  c.phase = "after_launch";
  Producer p;
  p.tensor = producer ? "buf3" : "arg1_1";
  p.call_index = producer;
  p.kernel = producer ? kernel_at(*producer) : "";
  c.producer = p;
  r.culprit = c;
  return r;
}

bool valid_entity(const std::string& s, size_t amp) {
  static const std::regex entity(R"(^&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)");
  return std::regex_search(s.begin() + static_cast<std::ptrdiff_t>(amp), s.end(), entity);
}

// A small XML checker: one root, balanced tags, quoted attributes without
// '<', and every '&' an entity. Returns "" or what is wrong.
std::string svg_problem(const std::string& s) {
  size_t i = 0;
  if (s.rfind("<?xml", 0) == 0) {
    i = s.find("?>");
    if (i == std::string::npos) {
      return "unterminated XML declaration";
    }
    i += 2;
  }
  std::vector<std::string> open;
  int roots = 0;
  auto name_at = [&](size_t& j) {
    size_t start = j;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '-' || s[j] == ':')) {
      ++j;
    }
    return s.substr(start, j - start);
  };
  while (i < s.size()) {
    if (s[i] == '&') {
      if (!valid_entity(s, i)) {
        return "bare '&' in text at " + std::to_string(i);
      }
      ++i;
    } else if (s[i] != '<') {
      if (open.empty() && !std::isspace(static_cast<unsigned char>(s[i]))) {
        return "text outside the root at " + std::to_string(i);
      }
      ++i;
    } else if (s.compare(i, 2, "</") == 0) {
      i += 2;
      std::string name = name_at(i);
      if (open.empty() || open.back() != name || i >= s.size() || s[i] != '>') {
        return "unbalanced </" + name + "> at " + std::to_string(i);
      }
      open.pop_back();
      ++i;
    } else {
      ++i;
      std::string name = name_at(i);
      if (name.empty()) {
        return "bad tag at " + std::to_string(i);
      }
      roots += open.empty() ? 1 : 0;
      std::set<std::string> attrs;
      while (true) {
        while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) {
          ++i;
        }
        if (s.compare(i, 2, "/>") == 0) {
          i += 2;
          break;
        }
        if (i < s.size() && s[i] == '>') {
          open.push_back(name);
          ++i;
          break;
        }
        std::string attr = name_at(i);
        if (attr.empty() || s.compare(i, 2, "=\"") != 0 || !attrs.insert(attr).second) {
          return "bad attribute in <" + name + "> at " + std::to_string(i);
        }
        size_t end = s.find('"', i + 2);
        if (end == std::string::npos) {
          return "unterminated attribute";
        }
        for (size_t j = i + 2; j < end; ++j) {
          if (s[j] == '<' || (s[j] == '&' && !valid_entity(s, j))) {
            return "bad character in attribute " + attr + " at " + std::to_string(j);
          }
        }
        i = end + 1;
      }
    }
  }
  if (!open.empty()) {
    return "<" + open.back() + "> never closed";
  }
  return roots == 1 ? "" : std::to_string(roots) + " root elements";
}

// The attributes of the first element at or after `from`.
std::map<std::string, std::string> attrs_at(const std::string& s, size_t from) {
  size_t start = s.find('<', from);
  std::string tag = s.substr(start, s.find('>', start) - start);
  std::map<std::string, std::string> out;
  static const std::regex attr(R"(([\w-]+)="([^"]*)\")");
  for (std::sregex_iterator it(tag.begin(), tag.end(), attr), end; it != end; ++it) {
    out[(*it)[1]] = (*it)[2];
  }
  return out;
}

struct Box {
  double x, y, w, h;
};
Box box_of(const std::map<std::string, std::string>& a) {
  return {std::stod(a.at("x")), std::stod(a.at("y")), std::stod(a.at("width")), std::stod(a.at("height"))};
}
Box cell(const std::string& svg, int k) {
  size_t at = svg.find("id=\"site-" + std::to_string(k) + "\"");
  REQUIRE(at != std::string::npos);
  return box_of(attrs_at(svg, svg.rfind('<', at)));
}
// The outline of a mark ("culprit", "producer"): the first rect in its group.
Box mark(const std::string& svg, const std::string& id) {
  size_t at = svg.find("<g id=\"" + id + "\">");
  REQUIRE(at != std::string::npos);
  return box_of(attrs_at(svg, svg.find("<rect", at)));
}
bool encloses(const Box& outer, const Box& inner) {
  return outer.x <= inner.x && outer.y <= inner.y && outer.x + outer.w >= inner.x + inner.w &&
         outer.y + outer.h >= inner.y + inner.h;
}

}  // namespace

TEST_SUITE_BEGIN("report/sink_svg");

TEST_CASE("report_to_svg: a cell per call site, the steps, the culprit and its producer on their cells") {
  std::string svg = report_to_svg(svg_report(12, 7, 3));
  CHECK(svg_problem(svg) == "");
  CHECK(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  CHECK(fixture::count(svg, "id=\"site-") == 12);
  for (int k = 1; k <= 12; ++k) {
    CHECK(svg.find("id=\"site-" + std::to_string(k) + "\"") != std::string::npos);
  }
  // Coloured by kind, in launch order left to right on one row.
  std::map<std::string, std::set<std::string>> fills;
  for (int k = 1; k <= 12; ++k) {
    size_t at = svg.rfind('<', svg.find("id=\"site-" + std::to_string(k) + "\""));
    fills[kind_at(k)].insert(attrs_at(svg, at).at("fill"));
  }
  CHECK(fills["cpp"].size() == 1);
  CHECK(fills["triton"].size() == 1);
  CHECK(fills["cpp"] != fills["triton"]);
  CHECK(fills["cpp"] != fills["extern"]);
  CHECK(cell(svg, 1).x < cell(svg, 2).x);
  CHECK(cell(svg, 12).y == cell(svg, 1).y);
  // One bar per step, coloured by verdict, the labels in words.
  const Bisection& b = *svg_report(12, 7, 3).bisection;
  CHECK(fixture::count(svg, "id=\"step-") == b.steps.size());
  CHECK(svg.find("1. trace call sites 1–12: reproduces") != std::string::npos);
  CHECK(svg.find("confirm call site 7: reproduces (2 of 3 runs agree)") != std::string::npos);
  auto step_fill = [&](int i) {
    return attrs_at(svg, svg.rfind('<', svg.find("id=\"step-" + std::to_string(i) + "\""))).at("fill");
  };
  CHECK(svg.find("2. bisect call sites 1–6: clean") != std::string::npos);
  CHECK(step_fill(2) != step_fill(1));  // clean, reproduces
  CHECK(step_fill(3) == step_fill(1));
  // The marks enclose their cells.
  CHECK(encloses(mark(svg, "culprit"), cell(svg, 7)));
  CHECK(!encloses(mark(svg, "culprit"), cell(svg, 6)));
  CHECK(encloses(mark(svg, "producer"), cell(svg, 3)));
  CHECK(svg.find(std::string("stroke=\"") + k_svg_culprit_colour + "\"") != std::string::npos);
  CHECK(svg.find("culprit: call site 7, cpp_fused_add_7 (cpp)") != std::string::npos);
  CHECK(svg.find("Culprit: call site 7 (of 12 that ran), cpp_fused_add_7 (cpp)") != std::string::npos);
  CHECK(svg.find("producer: call site 3, aoti_torch_cpu_addmm_out, made buf3") != std::string::npos);
  CHECK(svg.find("<title id=\"svg-title\">aoti-bisect: nonfinite, isolated (model model)</title>") !=
        std::string::npos);
  CHECK(svg.find("graph-input") == std::string::npos);
  // Self-contained: nothing fetched.
  CHECK(svg.find("href") == std::string::npos);
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(svg.find("@import") == std::string::npos);
  CHECK(fixture::count(svg, "http") == 1);  // the namespace name
}

TEST_CASE("report_to_svg: kernel and tensor names are escaped, bad UTF-8 replaced") {
  Report r = svg_report(5, 4, std::nullopt);
  r.bisection->sites[1].kernel = "k<&>\"'x";
  r.culprit->kernel = "evil</text><script>alert(1)</script>";
  r.culprit->producer->tensor = "in&put\xff\xfe";
  std::string svg = report_to_svg(r);
  CHECK(svg_problem(svg) == "");
  CHECK(svg.find("k&lt;&amp;&gt;&quot;&apos;x") != std::string::npos);
  CHECK(svg.find("k<&>") == std::string::npos);
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(svg.find("evil&lt;/text&gt;&lt;script&gt;") != std::string::npos);
  CHECK(svg.find("in&amp;put??") != std::string::npos);
  CHECK(svg.find('\xff') == std::string::npos);
  // The producer is a graph input: marked beside the strip, no call site marked.
  CHECK(svg.find("<g id=\"graph-input\">") != std::string::npos);
  CHECK(svg.find("<g id=\"producer\">") == std::string::npos);
  CHECK(svg.find("producer: the graph input in&amp;put??") != std::string::npos);
}

TEST_CASE("report_to_svg: a blind spot or a search without a culprit has no culprit mark") {
  Report r = svg_report(9, 6, 2);
  r.culprit.reset();
  r.verdict = Verdict::not_isolated;
  r.bisection->status = "blind_spot";
  std::string svg = report_to_svg(r);
  CHECK(svg_problem(svg) == "");
  CHECK(fixture::count(svg, "id=\"site-") == 9);
  CHECK(svg.find("id=\"culprit\"") == std::string::npos);
  CHECK(svg.find("id=\"producer\"") == std::string::npos);
  CHECK(svg.find("blind spot") != std::string::npos);
  CHECK(svg.find("aoti-bisect: nonfinite, not_isolated") != std::string::npos);

  r.bisection->status = "inconclusive";
  r.bisection->steps.back().verdict = "inconclusive";
  svg = report_to_svg(r);
  CHECK(svg.find("No culprit: the search ended inconclusive") != std::string::npos);
  CHECK(svg_problem(svg) == "");

  // Sites the steps cover that never ran: grey cells without an id.
  r.bisection->sites.resize(6);
  svg = report_to_svg(r);
  CHECK(svg_problem(svg) == "");
  CHECK(fixture::count(svg, "id=\"site-") == 6);
  CHECK(fixture::count(svg, "fill=\"#e8e8e8\"") == 3 + 1);  // sites 7-9, the legend's swatch

  // No call sites (the trace run never got that far): no picture.
  r.bisection->sites.clear();
  CHECK(report_to_svg(r) == "");
  r.bisection.reset();
  CHECK(report_to_svg(r) == "");
}

TEST_CASE("report_to_svg: 1,500 call sites wrap into rows of 100 and stay a sane size") {
  Report r = svg_report(1500, 1234, 1100);
  std::string svg = report_to_svg(r);
  CHECK(svg_problem(svg) == "");
  CHECK(fixture::count(svg, "id=\"site-") == 1500);
  CHECK(svg.size() < 400 * 1024);
  std::smatch m;
  REQUIRE(std::regex_search(svg, m, std::regex(R"re(<svg [^>]*height="(\d+)")re")));
  double height = std::stod(m[1]);
  CHECK(height > 300);
  CHECK(height < 1200);
  // Row 13 (1201-1300), column 34: below row 1, aligned with site 34.
  CHECK(cell(svg, 1234).x == doctest::Approx(cell(svg, 34).x));
  CHECK(cell(svg, 1234).y > cell(svg, 1134).y);
  CHECK(cell(svg, 101).x == doctest::Approx(cell(svg, 1).x));
  CHECK(cell(svg, 2).x - cell(svg, 1).x > 5);  // still wide enough to see
  CHECK(encloses(mark(svg, "culprit"), cell(svg, 1234)));
  CHECK(encloses(mark(svg, "producer"), cell(svg, 1100)));

  // A linear search over them: the first and last 20 steps drawn.
  for (int k = 1; k <= 300; ++k) {
    r.bisection->steps.push_back({k, k, "linear", "clean", 1, 1, ""});
  }
  svg = report_to_svg(r);
  CHECK(svg_problem(svg) == "");
  CHECK(fixture::count(svg, "id=\"step-") == 40);
  CHECK(svg.find("more steps") != std::string::npos);
  CHECK(svg.size() < 400 * 1024);

  // 20,000 call sites: rows of 500, no tooltip per cell.
  svg = report_to_svg(svg_report(20000, 15000, std::nullopt));
  CHECK(svg_problem(svg) == "");
  CHECK(fixture::count(svg, "id=\"site-") == 20000);
  CHECK(cell(svg, 501).x == doctest::Approx(cell(svg, 1).x));
  CHECK(svg.size() < 2 * 1024 * 1024);
}

TEST_CASE("report.md links report.svg and report.json lists the call sites, when there are some") {
  Report r = svg_report(4, 2, std::nullopt);
  std::string md = report_to_markdown(r);
  CHECK(md.find("](report.svg)") != std::string::npos);
  auto j = nlohmann::json::parse(report_to_json(r));
  REQUIRE(j["bisection"]["sites"].size() == 4);
  CHECK(j["bisection"]["sites"][2] ==
        nlohmann::json{{"index", 3}, {"kernel", "aoti_torch_cpu_addmm_out"}, {"kind", "extern"}});
  r.bisection->sites.clear();
  CHECK(report_to_markdown(r).find("report.svg") == std::string::npos);
  CHECK(nlohmann::json::parse(report_to_json(r))["bisection"]["sites"] == nlohmann::json::array());
}

TEST_CASE("write_reports: report.svg beside report.md, removed when there is nothing to draw") {
  Report r = svg_report(4, 2, std::nullopt);
  write_reports(r, "out-svg", false);
  REQUIRE(fs::exists("out-svg/report.svg"));
  CHECK(read_file("out-svg/report.svg", "report.svg") == report_to_svg(r));
  r.bisection->sites.clear();
  write_reports(r, "out-svg", false);
  CHECK(!fs::exists("out-svg/report.svg"));
  CHECK(fs::exists("out-svg/report.md"));
}
