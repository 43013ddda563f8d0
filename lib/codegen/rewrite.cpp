// The wrapper rewrite: the package's wrapper.cpp with probe calls around every call site.
#include "codegen/rewrite.hpp"

#include <set>
#include <sstream>

#include <fmt/format.h>

#include "common/cpp_text.hpp"
#include "common/text.hpp"
#include "wrapper/triton_launch.hpp"

namespace aoti_bisect {
namespace {

// The source's lines, each written back with its newline (no last empty line).
std::vector<std::string> source_lines_of(const std::string& text) {
  std::vector<std::string> lines = cpp_text::split_lines_copy(text);
  if (!lines.empty() && lines.back().empty()) {
    lines.pop_back();
  }
  return lines;
}

// The printer's rule (a buffer or graph input), extended to the ones inside
// subgraphs ("true_graph_0_buf1"), which the printer leaves out.
bool probe_worthy(const std::string& name) {
  return is_tensor_variable_name(name);
}

// The last line (0-based) of the statement that starts on `first`.
size_t statement_end(const std::vector<std::string>& lines, size_t first) {
  int depth = 0;
  bool opened = false;
  for (size_t j = first; j < lines.size() && j < first + 64; ++j) {
    for (char c : lines[j]) {
      depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      opened = opened || c == '(';
    }
    if (opened && depth <= 0 && lines[j].find(';') != std::string::npos) {
      return j;
    }
  }
  return first;
}

// A Triton call site's tensor arguments as written, in order: the
// arguments whose call_triton_<kernel> parameter becomes a CUdeviceptr. The
// printer (cpp_wrapper_gpu.py, debug_utils.py) keeps every argument whose
// type is a torch dtype, whatever its name (constants included).
std::optional<std::vector<std::string>> triton_tensor_args(const std::vector<std::string>& lines, size_t first,
                                                           size_t last, const CallSite& site,
                                                           const std::map<std::string, TritonLaunch>& launches) {
  auto launch = launches.find(site.kernel);
  if (launch == launches.end()) {
    return std::nullopt;
  }
  std::string statement;
  for (size_t j = first; j <= last; ++j) {
    statement += lines[j] + " ";
  }
  size_t at = statement.find("call_" + site.kernel + "(");
  if (at == std::string::npos) {
    return std::nullopt;
  }
  size_t open = statement.find('(', at);
  size_t close = cpp_text::closing_bracket(statement, open);
  if (close == std::string::npos) {
    return std::nullopt;
  }
  auto args = split_call_arguments(std::string_view(statement).substr(open, close - open + 1));
  std::vector<std::string> out;
  for (int p : launch->second.tensor_params()) {
    if (static_cast<size_t>(p) < args.size()) {
      out.push_back(args[p]);
    }
  }
  return out;
}

}  // namespace

std::string insert_probes(const std::string& source, const WrapperInfo& wrapper, ProbeText how) {
  std::vector<std::string> lines = source_lines_of(source);
  std::map<size_t, std::vector<std::string>> before, after;  // by 0-based line
  std::map<std::string, TritonLaunch> launches = triton_launches(source);
  for (const auto& site : wrapper.call_sites) {
    if (site.line <= 0 || static_cast<size_t>(site.line) > lines.size() ||
        (how.only != nullptr && !how.only->count(site.index))) {
      continue;
    }
    size_t first = static_cast<size_t>(site.line) - 1;
    size_t last = statement_end(lines, first);
    std::string indent = lines[first].substr(0, lines[first].find_first_not_of(" \t"));
    std::set<std::string> created(site.returns.begin(), site.returns.end());
    std::set<std::string> seen;
    auto call = [&](const std::string& handle, const std::string& name, const char* phase) {
      if (how.print) {
        return fmt::format("{}aoti_torch_print_tensor_handle({}, \"{} - {} - {}\");", indent, handle, phase,
                           site.kernel, name);
      }
      return fmt::format("{}aoti_torch_save_tensor_handle({}, \"{}\", \"{}\", \"{}\");", indent, handle, name, phase,
                         site.kernel);
    };
    if (site.kind == KernelKind::triton) {
      if (auto tensors = triton_tensor_args(lines, first, last, site, launches)) {
        for (const auto& arg : *tensors) {
          before[first].push_back(call(arg, arg, "before_launch"));
          after[last].push_back(call(arg, arg, "after_launch"));
        }
        continue;
      }
    }
    for (const auto& arg : site.args) {
      // A view's buffer (`reinterpret_tensor_wrapper(buf5, ...)`), alive at
      // the call, is probed under its own name: an extern call whose tensor
      // arguments are all views (scaled_dot_product_attention's q, k, v)
      // would otherwise show nothing before its launch.
      std::string name = arg.rfind("view of ", 0) == 0 ? arg.substr(8) : arg;
      if (!probe_worthy(name) || !seen.insert(name).second) {
        continue;
      }
      if (created.count(name)) {
        after[last].push_back(call(name + "_handle", name, "after_launch"));
        continue;
      }
      before[first].push_back(call(name, name, "before_launch"));
      after[last].push_back(call(name, name, "after_launch"));
    }
  }
  std::string out;
  out.reserve(source.size() + 128 * (before.size() + after.size()));
  for (size_t i = 0; i < lines.size(); ++i) {
    for (const auto& l : before[i]) {
      out += l + "\n";
    }
    out += lines[i] + "\n";
    for (const auto& l : after[i]) {
      out += l + "\n";
    }
  }
  return out;
}

std::optional<std::vector<std::string>> recorded_command(const std::string& source, std::string_view marker) {
  std::string m = "// " + std::string(marker) + "\n// ";
  size_t p = source.rfind(m);
  if (p == std::string::npos) {
    return std::nullopt;
  }
  p += m.size();
  std::string line = source.substr(p, source.find('\n', p) - p);
  std::vector<std::string> argv;
  std::istringstream in(line);
  for (std::string tok; in >> tok;) {
    argv.push_back(tok);
  }
  if (argv.size() < 3) {
    return std::nullopt;
  }
  return argv;
}

std::vector<std::string> adapt_compile(std::vector<std::string> cmd, const std::string& source,
                                       const std::string& output) {
  std::vector<std::string> out;
  bool replaced_source = false;
  for (size_t i = 0; i < cmd.size(); ++i) {
    const std::string& a = cmd[i];
    if (a == "-include" && i + 1 < cmd.size()) {
      ++i;  // the build machine's precompiled header
      continue;
    }
    if (a == "-o" && i + 1 < cmd.size()) {
      out.insert(out.end(), {"-o", output});
      ++i;
      continue;
    }
    if (!replaced_source && a.size() > 4 && a.ends_with(".cpp")) {
      out.push_back(source);
      replaced_source = true;
      continue;
    }
    out.push_back(a);
  }
  return out;
}

std::vector<std::string> adapt_link(std::vector<std::string> cmd, const std::map<std::string, std::string>& objects,
                                    const std::string& output) {
  std::vector<std::string> out;
  for (size_t i = 0; i < cmd.size(); ++i) {
    const std::string& a = cmd[i];
    if (a == "-o" && i + 1 < cmd.size()) {
      out.insert(out.end(), {"-o", output});
      ++i;
      continue;
    }
    std::string replaced = a;
    for (const auto& [suffix, path] : objects) {
      if (a.ends_with(suffix)) {
        replaced = path;
      }
    }
    out.push_back(replaced);
  }
  return out;
}

std::string weights_assembly(const std::string& bin_file, bool writable) {
  return fmt::format(
      "\t.section\t{},\"{}\"\n\t.balign 64\n\t.globl\t_binary_constants_bin_start\n_binary_constants_bin_start:\n"
      "\t.incbin \"{}\"\n\t.globl\t_binary_constants_bin_end\n_binary_constants_bin_end:\n",
      writable ? ".ldata" : ".lrodata", writable ? "aw" : "a", bin_file);
}

}  // namespace aoti_bisect
