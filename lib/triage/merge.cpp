// `aoti-bisect triage-merge`: the shards' summary.json read, checked to come from one manifest, and
// merged into one summary in manifest order, with report paths rewritten to stay valid.

#include "triage/merge.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "triage/shard.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void refuse(const std::string& message) {
  throw Error(ErrorKind::usage, "triage-merge: " + message);
}

std::string shown(const fs::path& dir) {
  return display_path(dir);
}

// What every shard must share with the first.
void check_same_run(const ShardInput& first, const ShardInput& other) {
  const Summary& a = first.summary;
  const Summary& b = other.summary;
  if (a.manifest_sha256 != b.manifest_sha256) {
    refuse(fmt::format(
        "'{}' and '{}' come from different manifests (sha256 {} and {}); merge the shards of one "
        "manifest",
        shown(first.dir), shown(other.dir), a.manifest_sha256.substr(0, 12), b.manifest_sha256.substr(0, 12)));
  }
  if (a.tool_version != b.tool_version) {
    refuse(fmt::format("'{}' was written by aoti-bisect {} and '{}' by {}; run every shard with one version",
                       shown(first.dir), a.tool_version, shown(other.dir), b.tool_version));
  }
}

Shard shard_of_summary(const ShardInput& in) {
  if (in.summary.shard.empty()) {
    return Shard{0, 1};  // an unsharded triage is the one shard of one
  }
  try {
    return parse_shard(in.summary.shard);
  } catch (const Error&) {
    refuse(fmt::format("'{}' names shard '{}', which is not K/N", shown(in.dir), printable_name(in.summary.shard)));
  }
}

// Every shard 0..N-1 exactly once, all of one N.
void check_shards(const std::vector<ShardInput>& shards) {
  std::map<int, const ShardInput*> seen;
  const Shard first = shard_of_summary(shards.front());
  for (const auto& in : shards) {
    Shard s = shard_of_summary(in);
    if (s.count != first.count) {
      refuse(fmt::format("'{}' is shard {} and '{}' is shard {}: one manifest, one shard count",
                         shown(shards.front().dir), first.text(), shown(in.dir), s.text()));
    }
    auto [it, fresh] = seen.emplace(s.index, &in);
    if (!fresh) {
      refuse(fmt::format("shard {} is given twice ('{}' and '{}')", s.text(), shown(it->second->dir), shown(in.dir)));
    }
  }
  std::vector<std::string> missing;
  for (int k = 0; k < first.count; ++k) {
    if (seen.count(k) == 0) {
      missing.push_back(std::to_string(k));
    }
  }
  if (!missing.empty()) {
    std::vector<std::string> have;
    for (const auto& [k, in] : seen) {
      have.push_back(std::to_string(k));
    }
    refuse(fmt::format("missing shard{} {} of {} (given: {}); merge every shard's folder",
                       missing.size() == 1 ? "" : "s", join(missing, ", "), first.count, join(have, ", ")));
  }
}

// The case's report, from the merged folder.
std::string report_from(const fs::path& out_dir, const fs::path& shard_dir, const std::string& report) {
  if (report.empty()) {
    return "";
  }
  std::error_code ec;
  fs::path from = fs::weakly_canonical(fs::absolute(out_dir), ec);
  fs::path to = fs::weakly_canonical(fs::absolute(shard_dir) / report, ec);
  fs::path rel = to.lexically_relative(from);
  return rel.empty() ? (fs::absolute(shard_dir) / report).string() : rel.generic_string();
}

}  // namespace

ShardInput read_shard(const fs::path& dir) {
  fs::path file = dir / "summary.json";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    refuse(fmt::format("'{}' holds no summary.json (give the --out folder of each `triage --shard K/N`)", shown(dir)));
  }
  std::string text;
  nlohmann::json doc;
  try {
    text = read_file(file, "summary");
    doc = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    refuse(fmt::format("'{}' cannot be read as JSON ({})", shown(file), printable_name(e.what())));
  }
  ShardInput in{dir, summary_from_json(doc, shown(file))};
  if (in.summary.command != "triage") {
    refuse(fmt::format("'{}' is a {} summary, not a triage one", shown(file),
                       in.summary.command.empty() ? "nameless" : in.summary.command));
  }
  return in;
}

Summary merge_shards(const std::vector<ShardInput>& shards, const fs::path& out_dir,
                     const std::optional<std::vector<EarlierFailure>>& baseline, const std::string& baseline_source) {
  if (shards.empty()) {
    refuse("no shard folders given");
  }
  for (const auto& in : shards) {
    check_same_run(shards.front(), in);
  }
  check_shards(shards);
  Summary m;
  const Summary& first = shards.front().summary;
  m.tool_version = first.tool_version;
  m.command = "triage";
  m.manifest = first.manifest;
  m.manifest_sha256 = first.manifest_sha256;
  m.manifest_cases = first.manifest_cases;
  m.baseline = baseline ? baseline_source : "";
  std::map<std::string, const ShardInput*> owner;
  for (const auto& in : shards) {
    for (const auto& c : in.summary.cases) {
      auto [it, fresh] = owner.emplace(c.name, &in);
      if (!fresh) {
        refuse(fmt::format("case '{}' is in both '{}' and '{}'", printable_name(c.name), shown(it->second->dir),
                           shown(in.dir)));
      }
      CaseResult merged = c;
      merged.report = report_from(out_dir, in.dir, c.report);
      m.cases.push_back(std::move(merged));
    }
    m.interrupted = m.interrupted || in.summary.interrupted;
    m.seconds = std::max(m.seconds, in.summary.seconds);  // shards run side by side
    m.merged_from.push_back(
        {report_from(out_dir, in.dir, "."), shard_of_summary(in).text(), static_cast<int>(in.summary.cases.size())});
  }
  if (m.manifest_cases > 0 && static_cast<int>(m.cases.size()) != m.manifest_cases) {
    refuse(fmt::format("the shards hold {} cases, the manifest {}", m.cases.size(), m.manifest_cases));
  }
  std::stable_sort(m.cases.begin(), m.cases.end(),
                   [](const CaseResult& a, const CaseResult& b) { return a.index < b.index; });
  std::sort(m.merged_from.begin(), m.merged_from.end(), [](const MergedShard& a, const MergedShard& b) {
    return parse_shard(a.shard).index < parse_shard(b.shard).index;
  });
  m.groups = group_cases(m.cases);
  if (baseline) {
    mark_against_baseline(m, *baseline);
  }
  m.exit_code = triage_exit_code(m.cases, m.interrupted);
  return m;
}

}  // namespace aoti_bisect
