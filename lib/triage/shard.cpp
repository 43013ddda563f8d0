// `triage --shard K/N`: the shard parsed or taken from the scheduler's environment (Slurm, Kubernetes),
// and each case's shard from a hash of its name.

#include "triage/shard.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/text.hpp"

namespace aoti_bisect {

namespace {

[[noreturn]] void usage(const std::string& message) {
  throw Error(ErrorKind::usage, message);
}

// A whole non-negative decimal number, or nullopt.
std::optional<long long> whole_number(const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(text);
}

long long variable(const EnvLookup& env, const std::string& name, const std::string& what) {
  std::optional<std::string> v = env(name);
  if (!v) {
    usage(fmt::format("--shard-from-env: {} is not set ({})", name, what));
  }
  auto n = whole_number(std::string(trim(*v)));
  if (!n) {
    usage(fmt::format("--shard-from-env: {}='{}' is not a whole number", name, printable_name(*v)));
  }
  return *n;
}

Shard checked(long long index, long long count, const std::string& index_name, const std::string& count_name) {
  if (count < 1) {
    usage(fmt::format("--shard-from-env: {} is {}: the shard count must be at least 1", count_name, count));
  }
  if (index >= count) {
    usage(fmt::format("--shard-from-env: {} gives shard {}, but {} says there are {} (shards are 0..{})", index_name,
                      index, count_name, count, count - 1));
  }
  return Shard{static_cast<int>(index), static_cast<int>(count)};
}

}  // namespace

std::string Shard::text() const {
  return fmt::format("{}/{}", index, count);
}

Shard parse_shard(const std::string& text) {
  size_t slash = text.find('/');
  auto k = slash == std::string::npos ? std::nullopt : whole_number(text.substr(0, slash));
  auto n = slash == std::string::npos ? std::nullopt : whole_number(text.substr(slash + 1));
  if (!k || !n) {
    usage(fmt::format("--shard '{}' is not K/N (shard K of N, 0-based: 0/4 .. 3/4)", printable_name(text)));
  }
  if (*n < 1) {
    usage(fmt::format("--shard '{}': the shard count must be at least 1", text));
  }
  if (*k >= *n) {
    usage(fmt::format("--shard '{}': shards are 0-based, so K must be below {} (0..{})", text, *n, *n - 1));
  }
  return Shard{static_cast<int>(*k), static_cast<int>(*n)};
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v == nullptr ? std::nullopt : std::optional<std::string>(v);
  };
}

Shard shard_from_env(const EnvLookup& env, std::optional<int> count) {
  if (env("SLURM_ARRAY_TASK_ID")) {
    long long id = variable(env, "SLURM_ARRAY_TASK_ID", "");
    long long min = env("SLURM_ARRAY_TASK_MIN") ? variable(env, "SLURM_ARRAY_TASK_MIN", "") : 0;
    long long n =
        count ? *count
              : variable(env, "SLURM_ARRAY_TASK_COUNT", "Slurm sets it for job arrays; or give --shard-count N");
    if (id < min) {
      usage(fmt::format("--shard-from-env: SLURM_ARRAY_TASK_ID {} is below SLURM_ARRAY_TASK_MIN {}", id, min));
    }
    return checked(id - min, n, min > 0 ? "SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN" : "SLURM_ARRAY_TASK_ID",
                   count ? "--shard-count" : "SLURM_ARRAY_TASK_COUNT");
  }
  bool k8s = env("JOB_COMPLETION_INDEX").has_value();
  std::string index_name = k8s ? "JOB_COMPLETION_INDEX" : "AOTI_BISECT_SHARD_INDEX";
  if (!k8s && !env("AOTI_BISECT_SHARD_INDEX")) {
    usage(
        "--shard-from-env: none of SLURM_ARRAY_TASK_ID (Slurm), JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) "
        "or AOTI_BISECT_SHARD_INDEX (any other scheduler, e.g. a GitHub Actions matrix) is set");
  }
  long long index = variable(env, index_name, "");
  long long n = count ? *count
                      : variable(env, "AOTI_BISECT_SHARD_COUNT",
                                 k8s ? "an Indexed Job does not say how many completions it has: give --shard-count N "
                                       "or set it to the Job's completions"
                                     : "set it to the number of shards, e.g. ${{ strategy.job-total }}");
  return checked(index, n, index_name, count ? "--shard-count" : "AOTI_BISECT_SHARD_COUNT");
}

uint64_t fnv1a64(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t fmix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

int shard_of(const std::string& case_name, int count) {
  return count <= 1 ? 0 : static_cast<int>(fmix64(fnv1a64(case_name)) % static_cast<uint64_t>(count));
}

std::vector<ManifestCase> cases_of_shard(const std::vector<ManifestCase>& cases, const Shard& shard) {
  std::vector<ManifestCase> out;
  for (const auto& c : cases) {
    if (shard_of(c.name, shard.count) == shard.index) {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace aoti_bisect
