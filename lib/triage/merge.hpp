#pragma once
// `aoti-bisect triage-merge DIR... --out MERGED`: the summaries of the
// shards of one manifest (`triage --shard K/N`, each run where the
// scheduler put it) made into one summary.json, summary.md and junit.xml,
// equal to what an unsharded triage of the manifest writes in its cases,
// verdicts, signatures, groups and statuses. Each case's report path is
// rewritten to stay valid from MERGED (`../shard-0/cases/x/report.json`).

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "triage/summary.hpp"

namespace aoti_bisect {

struct ShardInput {
  std::filesystem::path dir;  // the shard's --out folder, as given
  Summary summary;            // its summary.json
};

// Reads DIR/summary.json. Throws Error(usage) naming the folder when there
// is none or it is not a triage summary.
ShardInput read_shard(const std::filesystem::path& dir);

// Merges the shards into one summary for `out_dir`. Refuses with
// Error(usage), one line: summaries from different manifests (their
// manifest_sha256) or tool versions, one that is not a triage summary, two
// shard counts, a shard given twice, a case in two shards, missing shards
// (listed). Cases come in manifest order; groups by signature across shards;
// with `baseline`, each group is marked new, known or fixed against it. The
// exit code follows triage's (130 when a shard was interrupted).
Summary merge_shards(const std::vector<ShardInput>& shards, const std::filesystem::path& out_dir,
                     const std::optional<std::vector<EarlierFailure>>& baseline, const std::string& baseline_source);

}  // namespace aoti_bisect
