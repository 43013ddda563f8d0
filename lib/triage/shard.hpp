#pragma once
// `triage --shard K/N`: one shard of a manifest, for a job array run by the
// scheduler a team already has (Slurm, a Kubernetes Indexed Job, a CI
// matrix). A case belongs to shard fmix64(FNV-1a-64(case name)) mod N
// (fmix64: MurmurHash3's 64-bit finalizer, without which FNV-1a's low bits
// follow only the parity of the name's bytes, and mod 2 splits badly): a case's
// shard depends on its name and N alone, so adding or removing a case moves
// no other case; changing N reshuffles them. Shards are 0-based, as Slurm
// array indices (`--array=0-15`) and Kubernetes completion indices are.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "triage/manifest.hpp"

namespace aoti_bisect {

struct Shard {
  int index = 0;  // 0 .. count-1
  int count = 1;
  std::string text() const;  // "K/N"
  bool operator==(const Shard& o) const { return index == o.index && count == o.count; }
};

// "K/N" with 0 <= K < N. Throws Error(usage), one line naming the value.
Shard parse_shard(const std::string& text);

// A variable of the environment, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_env();

// The shard the scheduler says this task is, first found of:
//   - Slurm job arrays: SLURM_ARRAY_TASK_ID, minus SLURM_ARRAY_TASK_MIN when
//     set (an array 1-16 is shards 0-15), of SLURM_ARRAY_TASK_COUNT;
//   - Kubernetes Indexed Jobs: JOB_COMPLETION_INDEX, of `count` (the Job's
//     completions: --shard-count) or AOTI_BISECT_SHARD_COUNT;
//   - anything else (a GitHub Actions matrix): AOTI_BISECT_SHARD_INDEX of
//     AOTI_BISECT_SHARD_COUNT (or `count`).
// A missing, non-numeric or inconsistent variable is Error(usage) naming it.
Shard shard_from_env(const EnvLookup& env, std::optional<int> count);

// FNV-1a, 64 bits, of the bytes of `text`.
uint64_t fnv1a64(const std::string& text);
// MurmurHash3's 64-bit finalizer.
uint64_t fmix64(uint64_t h);

// The shard `case_name` belongs to among `count`.
int shard_of(const std::string& case_name, int count);

// The cases of `shard`, in manifest order.
std::vector<ManifestCase> cases_of_shard(const std::vector<ManifestCase>& cases, const Shard& shard);

}  // namespace aoti_bisect
