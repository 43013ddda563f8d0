// Reading the triage manifest's YAML: each case's name, paths relative to the manifest and
// `aoti-bisect run` options, mistakes refused at FILE:LINE:COL.

#include "triage/manifest.hpp"

#include <set>

#include "common/files.hpp"
#include "config/yaml_read.hpp"

namespace aoti_bisect {
namespace fs = std::filesystem;
using namespace yaml_read;

namespace {

// Key rules read into a case; paths are resolved after the whole case is read.
struct CaseFields {
  ManifestCase c;
  const fs::path* base = nullptr;
  const RunOptionCheck* check = nullptr;
};

std::vector<std::string> options_of(const Field& f, const RunOptionCheck& check) {
  if (!f.node.IsSequence()) {
    fail(f, fmt::format("'options' must be a list of `aoti-bisect run` options, e.g. [--strategy, bisect]; got {}",
                        describe(f.node)));
  }
  std::vector<std::string> out;
  for (const YAML::Node& item : f.node) {
    if (!item.IsScalar()) {
      fail_at(f.source, item.Mark(), fmt::format("each of 'options' must be a string, got {}", describe(item)));
    }
    const std::string& text = item.Scalar();
    for (const auto& own : options_set_by_manifest()) {
      if (text == own || text.rfind(own + "=", 0) == 0) {
        fail_at(f.source, item.Mark(),
                fmt::format("option '{}' is set by the manifest itself{}", own,
                            own == "--timeout" || own == "--repeats" || own == "--jobs"
                                ? fmt::format(": use the case's '{}' key", own.substr(2))
                                : ""));
      }
    }
    out.push_back(text);
  }
  if (check) {
    if (auto why = check(out)) {
      fail(f, fmt::format("'options': {}", *why));
    }
  }
  return out;
}

fs::path path_of(const Field& f, const fs::path& base) {
  std::string text = string_of(f);
  if (text.empty()) {
    fail(f, fmt::format("'{}' must be a path, got an empty string", f.key));
  }
  fs::path p(text);
  return p.is_absolute() ? p : base / p;
}

// One path, or a non-empty list of them (the batches of a loop, in order).
std::vector<fs::path> paths_of(const Field& f, const fs::path& base) {
  if (!f.node.IsSequence()) {
    return {path_of(f, base)};
  }
  if (f.node.size() == 0) {
    fail(f, fmt::format("'{}' must be a path or a non-empty list of paths, got an empty list", f.key));
  }
  std::vector<fs::path> out;
  for (const YAML::Node& item : f.node) {
    Field each{f.source, f.key, f.key_node, item};
    out.push_back(path_of(each, base));
  }
  return out;
}

const std::vector<KeyRule<CaseFields>>& case_keys() {
  static const std::vector<KeyRule<CaseFields>> rules = {
      {"name",
       [](const Field& f, CaseFields& c) {
         c.c.name = string_of(f);
         if (!valid_case_name(c.c.name)) {
           fail(f,
                fmt::format("case name '{}' must be letters, digits, '.', '_' or '-' (it names a folder)", c.c.name));
         }
       }},
      {"package", [](const Field& f, CaseFields& c) { c.c.package = path_of(f, *c.base); }},
      {"inputs", [](const Field& f, CaseFields& c) { c.c.inputs = paths_of(f, *c.base); }},
      {"reference", [](const Field& f, CaseFields& c) { c.c.reference = path_of(f, *c.base); }},
      {"exported_program", [](const Field& f, CaseFields& c) { c.c.exported_program = path_of(f, *c.base); }},
      {"config", [](const Field& f, CaseFields& c) { c.c.config = path_of(f, *c.base); }},
      {"load_library", [](const Field& f, CaseFields& c) { c.c.load_libraries = paths_of(f, *c.base); }},
      {"against_eager", [](const Field& f, CaseFields& c) { c.c.against_eager = boolean(f); }},
      {"model", [](const Field& f, CaseFields& c) { c.c.model = string_of(f); }},
      {"timeout",
       [](const Field& f, CaseFields& c) { c.c.timeout_s = number(f, false, "positive number of seconds"); }},
      {"repeats", [](const Field& f, CaseFields& c) { c.c.repeats = positive_int(f); }},
      {"jobs", [](const Field& f, CaseFields& c) { c.c.jobs = positive_int(f); }},
      {"options", [](const Field& f, CaseFields& c) { c.c.options = options_of(f, *c.check); }},
  };
  return rules;
}

struct Root {
  std::vector<ManifestCase> cases;
  const fs::path* base = nullptr;
  const RunOptionCheck* check = nullptr;
  bool has_cases = false;
};

void read_cases(const Field& f, Root& root) {
  root.has_cases = true;
  if (!f.node.IsSequence() || f.node.size() == 0) {
    fail(f, fmt::format("'cases' must be a non-empty list of cases, got {}",
                        f.node.IsSequence() ? "an empty list" : describe(f.node)));
  }
  std::set<std::string> names;
  for (const YAML::Node& item : f.node) {
    CaseFields c;
    c.base = root.base;
    c.check = root.check;
    c.c.index = static_cast<int>(root.cases.size());
    read_map(f.source, item, nullptr, "a case", case_keys(), c);
    // No `inputs`: the package's own sample inputs (aoti-bisect run without --inputs).
    for (auto [key, empty] :
         {std::pair<const char*, bool>{"name", c.c.name.empty()}, {"package", c.c.package.empty()}}) {
      if (empty) {
        fail_at(f.source, item.Mark(), fmt::format("a case needs '{}' (it has no '{}' key)", key, key));
      }
    }
    if (!names.insert(c.c.name).second) {
      fail_at(f.source, item["name"].Mark(), fmt::format("duplicate case name '{}'", c.c.name));
    }
    if (!c.c.reference.empty() && c.c.against_eager) {
      fail_at(f.source, item["against_eager"].Mark(), "a case has both 'reference' and 'against_eager': give one");
    }
    root.cases.push_back(std::move(c.c));
  }
}

const std::vector<KeyRule<Root>>& root_keys() {
  static const std::vector<KeyRule<Root>> rules = {
      {"cases", [](const Field& f, Root& r) { read_cases(f, r); }},
  };
  return rules;
}

}  // namespace

bool valid_case_name(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.size() > 200) {
    return false;
  }
  for (char c : name) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) {
      return false;
    }
  }
  return true;
}

const std::vector<std::string>& options_set_by_manifest() {
  static const std::vector<std::string> names = {"--out",     "--inputs",  "--reference",     "--exported-program",
                                                 "--config",  "--model",   "--against-eager", "--cache-dir",
                                                 "--timeout", "--repeats", "--jobs"};
  return names;
}

Manifest parse_manifest(const std::string& yaml_text, const std::string& source_name, const fs::path& base,
                        const RunOptionCheck& check) {
  YAML::Node doc = load_yaml(yaml_text, source_name);
  Root root;
  root.base = &base;
  root.check = &check;
  if (doc.IsNull()) {
    throw Error(ErrorKind::usage, fmt::format("{}: error: the manifest is empty; it needs 'cases:'", source_name));
  }
  read_map(source_name, doc, nullptr, "a manifest", root_keys(), root);
  if (!root.has_cases) {
    fail_at(source_name, doc.Mark(), "a manifest needs 'cases:'");
  }
  return Manifest{source_name, std::move(root.cases)};
}

Manifest load_manifest(const fs::path& path, const RunOptionCheck& check) {
  std::string text;
  try {
    text = read_file(path, "manifest");
  } catch (const Error& e) {
    throw Error(ErrorKind::usage, e.what());
  }
  fs::path base = path.parent_path();
  return parse_manifest(text, path.string(), base.empty() ? fs::path(".") : base, check);
}

}  // namespace aoti_bisect
