// The culprit kernel's definition with every intermediate probed, and the
// traced replay's report read back (repro/intermediates.hpp).
#include "repro/intermediates.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "codegen/hooks.hpp"
#include "common/cpp_text.hpp"
#include "common/text.hpp"
#include "repro/source_text.hpp"

namespace aoti_bisect {

namespace {

using cpp_text::is_ident_char;

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}

// An intermediate's name: tmp7, tmp_acc0, tmp_acc0_vec.
bool tmp_name(const std::string& s) {
  if (!std::string_view(s).starts_with("tmp") || s.size() == 3) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) { return is_ident_char(c); });
}

// A kernel's pointer (in_ptr0, out_ptr1, in_out_ptr0) or an alias of one.
bool pointer_name(const std::string& s) {
  for (std::string_view p : {"in_out_ptr", "in_ptr", "out_ptr"}) {
    if (std::string_view(s).starts_with(p) && s.size() > p.size() &&
        std::all_of(s.begin() + static_cast<std::ptrdiff_t>(p.size()), s.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      return true;
    }
  }
  return false;
}

// Every identifier the text names, called or not, members and qualified
// names' tails left out; literals and comments skipped.
std::vector<std::string> names_in(std::string_view text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    if (size_t past = cpp_text::skip_literal_or_comment(text, i); past != i) {
      i = past;
      continue;
    }
    if (ident_start(text[i]) && (i == 0 || !is_ident_char(text[i - 1]))) {
      size_t e = i;
      while (e < text.size() && is_ident_char(text[e])) {
        ++e;
      }
      bool member = i > 0 && (text[i - 1] == '.' || (i > 1 && text.substr(i - 2, 2) == "->") ||
                              (i > 1 && text.substr(i - 2, 2) == "::"));
      if (!member) {
        out.emplace_back(text.substr(i, e - i));
      }
      i = e;
    } else if (std::isdigit(static_cast<unsigned char>(text[i]))) {
      while (i < text.size() && (is_ident_char(text[i]) || text[i] == '.')) {
        ++i;  // a number with its suffix (16L, 1e-05)
      }
    } else {
      ++i;
    }
  }
  return out;
}

// `auto tmp7 = EXPR;` or `tmp_acc0 = EXPR;` (one line). Typed declarations
// (`float tmp_acc0 = 0;`) are starting values, not computed: `typed`.
struct Assignment {
  std::string target;
  std::string expr;
  bool declares = false;
  bool typed = false;
};
std::optional<Assignment> assignment(std::string_view line) {
  if (line.empty() || line.back() != ';') {
    return std::nullopt;
  }
  size_t eq = std::string_view::npos;
  int depth = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if (size_t past = cpp_text::skip_literal_or_comment(line, i); past != i) {
      i = past - 1;
      continue;
    }
    char c = line[i];
    depth += (c == '(' || c == '[' || c == '{' || c == '<')   ? 1
             : (c == ')' || c == ']' || c == '}' || c == '>') ? -1
                                                              : 0;
    if (c == '=' && depth == 0 && i > 0 && i + 1 < line.size() && line[i + 1] != '=' &&
        std::string_view("=!<>+-*/%&|^").find(line[i - 1]) == std::string_view::npos) {
      eq = i;
      break;
    }
  }
  if (eq == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view left = trim(line.substr(0, eq));
  size_t name_start = left.size();
  while (name_start > 0 && is_ident_char(left[name_start - 1])) {
    --name_start;
  }
  Assignment a;
  a.target = std::string(left.substr(name_start));
  std::string_view type = trim(left.substr(0, name_start));
  if (!tmp_name(a.target)) {
    return std::nullopt;
  }
  a.declares = !type.empty();
  a.typed = a.declares && type != "auto";
  a.expr = std::string(trim(line.substr(eq + 1, line.size() - eq - 2)));
  return a;
}

struct ForLoop {
  std::string var;
  std::string end;   // "" when the condition is not `var < END`
  std::string step;  // "" for a step of 1
};

// "static_cast<int64_t>(16L)" -> "16"; any other text as it is.
std::string literal_of(std::string text) {
  text = std::string(trim(text));
  if (std::string_view(text).starts_with("static_cast<int64_t>(") && text.back() == ')') {
    text = text.substr(21, text.size() - 22);
  }
  while (!text.empty() && (text.back() == 'L' || text.back() == 'l' || text.back() == 'U')) {
    text.pop_back();
  }
  return text;
}

// `for(int64_t x0=...; x0<END; x0+=STEP)` on one line.
std::optional<ForLoop> for_header(std::string_view line) {
  if (!std::string_view(line).starts_with("for(") && !std::string_view(line).starts_with("for (")) {
    return std::nullopt;
  }
  size_t open = line.find('(');
  size_t close = cpp_text::closing_bracket(line, open);
  if (close == std::string_view::npos) {
    return std::nullopt;
  }
  std::string inside(line.substr(open + 1, close - open - 1));
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : inside) {
    depth += (c == '(') ? 1 : (c == ')') ? -1 : 0;
    if (c == ';' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  if (parts.size() != 3) {
    return std::nullopt;
  }
  ForLoop f;
  std::string init(trim(parts[0]));
  size_t eq = init.find('=');
  if (eq == std::string::npos) {
    return std::nullopt;
  }
  std::string left(trim(std::string_view(init).substr(0, eq)));
  size_t s = left.size();
  while (s > 0 && is_ident_char(left[s - 1])) {
    --s;
  }
  f.var = left.substr(s);
  if (f.var.empty()) {
    return std::nullopt;
  }
  std::string cond(trim(parts[1]));
  if (std::string_view(cond).starts_with(f.var) && cond.size() > f.var.size() && cond[f.var.size()] == '<' &&
      (cond.size() == f.var.size() + 1 || cond[f.var.size() + 1] != '=')) {
    f.end = cond.substr(f.var.size() + 1);
  }
  std::string step(trim(parts[2]));
  if (std::string_view(step).starts_with(f.var + "+=")) {
    std::string by = literal_of(step.substr(f.var.size() + 2));
    f.step = by == "1" ? "" : by;
  } else if (step != f.var + "++" && step != "++" + f.var) {
    f.end.clear();  // some other stride: lanes not mapped
  }
  return f;
}

struct Scope {
  int parent = -1;
  std::optional<ForLoop> loop;
};

// Words an address expression may use besides loop variables, parameters
// and intermediates already computed.
bool address_word(const std::string& w) {
  static const std::set<std::string> words = {"static_cast", "int64_t",           "int32_t", "c10", "std",  "min",
                                              "max",         "div_floor_integer", "at",      "vec", "long", "int"};
  return words.count(w) > 0;
}

// Where the kernel's definition is in `kernel_cpp`: `def` where it starts,
// `open` and `close` its body's braces (`close` npos when not found).
struct KernelSpan {
  size_t def = std::string::npos;
  size_t open = std::string::npos;
  size_t close = std::string::npos;
};
KernelSpan find_kernel_span(const std::string& kernel_cpp, const std::string& kernel) {
  KernelSpan span;
  span.def = repro::kernel_definition_start(kernel_cpp, kernel);
  size_t params_end = span.def == std::string::npos
                          ? std::string::npos
                          : cpp_text::after_closing_bracket(
                                kernel_cpp, cpp_text::find_call(kernel_cpp, kernel, span.def) + kernel.size());
  span.open = params_end == std::string::npos ? std::string::npos : kernel_cpp.find('{', params_end);
  span.close = span.open == std::string::npos ? std::string::npos : cpp_text::closing_bracket(kernel_cpp, span.open);
  return span;
}

// The kernel's parameters, and the pointers it loads from: its pointer
// parameters and the pointers its body declares.
struct KernelNames {
  std::set<std::string> params, pointers;
  bool is_pointer(const std::string& n) const { return pointers.count(n) > 0 || pointer_name(n); }
};
KernelNames kernel_names(const std::string& kernel_cpp, const std::string& kernel, const KernelSpan& span) {
  KernelNames names;
  auto declared_params = kernel_declarations(kernel_cpp.substr(span.def, span.open - span.def) + ";");
  for (const auto& p : declared_params[kernel]) {
    names.params.insert(p.name);
    if (p.type.find('*') != std::string::npos) {
      names.pointers.insert(p.name);
    }
  }
  // Pointers the body declares (`float* local_buffer_data_0 = ...;`) are loaded from too.
  for (auto line : cpp_text::split_lines(std::string_view(kernel_cpp).substr(span.open, span.close - span.open))) {
    std::string_view t = trim(line);
    size_t star = t.find("* ");
    size_t eq = t.find(" = ");
    if (star != std::string_view::npos && eq != std::string_view::npos && star < eq &&
        t.substr(0, star).find_first_of("=(") == std::string_view::npos) {
      std::string name(trim(t.substr(star + 2, eq - star - 2)));
      if (!name.empty() && std::all_of(name.begin(), name.end(), [](char ch) { return is_ident_char(ch); })) {
        names.pointers.insert(name);
      }
    }
  }
  return names;
}

// The body's blocks: the scope each line starts in, the loop each scope is
// the body of, and the one statement of a for/if without braces.
struct BodyScopes {
  std::vector<Scope> scopes = std::vector<Scope>(1);
  std::vector<int> scope_of;
  std::vector<bool> unbraced;

  bool within(int inner, int outer) const {
    for (int s = inner; s >= 0; s = scopes[s].parent) {
      if (s == outer) {
        return true;
      }
    }
    return false;
  }
  std::vector<const ForLoop*> loops_at(int scope) const {
    std::vector<const ForLoop*> out;
    for (int s = scope; s >= 0; s = scopes[s].parent) {
      if (scopes[s].loop) {
        out.insert(out.begin(), &*scopes[s].loop);
      }
    }
    return out;
  }
};
BodyScopes body_scopes(const std::vector<std::string>& lines) {
  BodyScopes b;
  b.scope_of.assign(lines.size(), 0);
  b.unbraced.assign(lines.size(), false);
  int current = 0;
  std::optional<ForLoop> pending;
  bool control_pending = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    b.scope_of[i] = current;
    std::string_view t = trim(lines[i]);
    if (t.empty() || t[0] == '#') {
      continue;
    }
    if (auto f = for_header(t)) {
      pending = f;
      control_pending = true;
    } else if (std::string_view(t).starts_with("if(") || std::string_view(t).starts_with("if (") || t == "else" ||
               std::string_view(t).starts_with("while")) {
      control_pending = t.back() != '{' && t.back() != ';' && t.back() != '}';
    } else if (control_pending && t[0] != '{') {
      b.unbraced[i] = true;
      pending.reset();
      control_pending = false;
    }
    for (size_t k = 0; k < t.size(); ++k) {
      if (size_t past = cpp_text::skip_literal_or_comment(t, k); past != k) {
        k = past - 1;
        continue;
      }
      if (t[k] == '{') {
        b.scopes.push_back({current, pending});
        pending.reset();
        control_pending = false;
        current = static_cast<int>(b.scopes.size()) - 1;
      } else if (t[k] == '}' && current > 0) {
        current = b.scopes[current].parent;
      }
    }
  }
  return b;
}

// A store in one line: `tmpN.store(ADDRESS...)` (per lane) or
// `ptr[INDEX] = VALUE;`; `address` "" when the line stores nothing.
struct LineStore {
  std::string address, value;
  bool per_lane = false;
};
LineStore store_in_line(std::string_view u, const KernelNames& names) {
  LineStore store;
  size_t dot = u.find(".store(");
  if (dot != std::string_view::npos && tmp_name(std::string(u.substr(0, dot)))) {
    std::string call(u.substr(dot + 6));
    auto args = split_call_arguments(call.substr(0, cpp_text::after_closing_bracket(call, 0)));
    store.address = args.empty() ? "" : args[0];
    store.value = std::string(u.substr(0, dot));
    store.per_lane = true;
  } else if (size_t br = u.find('['); br != std::string_view::npos && names.is_pointer(std::string(u.substr(0, br)))) {
    size_t rb = cpp_text::closing_bracket(u, br);
    size_t eq = rb == std::string_view::npos ? rb : u.find('=', rb);
    if (eq != std::string_view::npos && eq + 1 < u.size() && u[eq + 1] != '=') {
      store.address = fmt::format("{} + ({})", u.substr(0, br), u.substr(br + 1, rb - br - 1));
      store.value = std::string(u.substr(eq + 1));
    }
  }
  return store;
}

// The pass over the body's lines: the intermediates declared so far (and
// where), the probe code to put before and after each line, and the
// statements probed.
struct StatementTracer {
  const std::vector<std::string>& lines;
  const BodyScopes& body;
  const KernelNames& names;
  std::vector<TracedStatement>& statements;
  std::map<std::string, std::pair<int, size_t>> declared;  // name -> (scope, line)
  std::vector<std::string> before = std::vector<std::string>(lines.size());
  std::vector<std::string> after = std::vector<std::string>(lines.size());

  bool visible(const std::string& name, int scope, size_t line) const {
    auto d = declared.find(name);
    return d != declared.end() && d->second.second < line && body.within(scope, d->second.first);
  }

  // Line `i`: a declaration noted; an assignment probed, where it computes
  // from intermediates (not a load) in its own braces.
  void trace_line(size_t i) {
    std::string_view t = trim(lines[i]);
    auto a = assignment(t);
    if (!a) {
      // A statement over several lines (`auto tmp3 = [&]` and a lambda's body):
      // its name is known from here on, its value is not probed.
      if (auto open_ended = assignment(std::string(t) + ";"); open_ended && open_ended->declares) {
        declared[open_ended->target] = {body.scope_of[i], i};
      }
      return;
    }
    if (a->declares) {
      declared[a->target] = {body.scope_of[i], i};
    }
    if (a->typed || body.unbraced[i] || !visible(a->target, body.scope_of[i], i + 1)) {
      return;
    }
    std::vector<std::string> operands;
    bool load = false;
    for (const auto& n : names_in(a->expr)) {
      load = load || names.is_pointer(n);
      if (tmp_name(n) && visible(n, body.scope_of[i], i) &&
          std::find(operands.begin(), operands.end(), n) == operands.end()) {
        operands.push_back(n);
      }
    }
    load = load || a->expr.find("loadu(") != std::string::npos || a->expr.find("masked_load(") != std::string::npos;
    if (load || operands.size() > 12) {
      return;
    }
    probe_statement(i, *a, operands);
  }

  // The probe of assignment `a` on line `i`, reading `operands`: its entry
  // in `statements`, and the lines around it that call aoti_trace::probe.
  void probe_statement(size_t i, const Assignment& a, const std::vector<std::string>& operands) {
    TracedStatement st;
    st.id = static_cast<int>(statements.size());
    st.target = a.target;
    st.text = a.target + " = " + a.expr;
    st.operands = operands;
    auto loops = body.loops_at(body.scope_of[i]);
    const ForLoop* vec = nullptr;
    for (const auto* l : loops) {
      st.loops.push_back(l->var);
      if (!l->step.empty() && !l->end.empty()) {
        vec = l;
        st.vector_loop = static_cast<int>(st.loops.size()) - 1;
      }
    }
    if (st.loops.size() > 12) {
      return;
    }
    // The operands as passed: an accumulator's own value from before the statement.
    std::vector<std::string> passed;
    std::string indent(lines[i].substr(0, lines[i].find_first_not_of(" \t")));
    for (const auto& o : operands) {
      if (o == a.target) {
        std::string old = fmt::format("aoti_trace_old_{}", st.id);
        before[i] += fmt::format("{}auto {} = {};\n", indent, old, o);
        passed.push_back(old);
      } else {
        passed.push_back(o);
      }
    }
    std::string loop_arg = "aoti_trace::loop()";
    if (!loops.empty()) {
      std::string valid = vec ? fmt::format(
                                    "std::min<int64_t>(static_cast<int64_t>({}), static_cast<int64_t>({}) - "
                                    "static_cast<int64_t>({}))",
                                    vec->step, vec->end, vec->var)
                              : "-1";
      loop_arg = fmt::format("aoti_trace::loop({}, {})", valid, join(st.loops, ", "));
    }
    std::string store_arg = store_argument(i, a.target, st);
    std::string args = fmt::format("{}, {}, {}, {}", st.id, loop_arg, store_arg, a.target);
    for (const auto& p : passed) {
      args += ", " + p;
    }
    after[i] = fmt::format("{}aoti_trace::probe({});\n", indent, args);
    statements.push_back(std::move(st));
  }

  // The store in the same loop body of what follows from this value, when
  // its address can be computed here.
  std::string store_argument(size_t i, const std::string& target, TracedStatement& st) const {
    std::string store_arg = "aoti_trace::no_store()";
    std::set<std::string> follows = {target};
    for (size_t j = i + 1; j < lines.size() && body.within(body.scope_of[j], body.scope_of[i]); ++j) {
      std::string_view u = trim(lines[j]);
      if (auto later = assignment(u)) {
        for (const auto& n : names_in(later->expr)) {
          if (follows.count(n)) {
            follows.insert(later->target);
          }
        }
        continue;
      }
      LineStore store = store_in_line(u, names);
      if (store.address.empty()) {
        continue;
      }
      bool from_here = false;
      for (const auto& n : names_in(store.value)) {
        from_here = from_here || follows.count(n) > 0;
      }
      if (!from_here) {
        continue;
      }
      bool computable = true;
      for (const auto& n : names_in(store.address)) {
        bool loop_var = std::find(st.loops.begin(), st.loops.end(), n) != st.loops.end();
        if (!loop_var && !names.params.count(n) && !names.is_pointer(n) && !address_word(n) &&
            !visible(n, body.scope_of[i], i + 1)) {
          computable = false;
        }
      }
      if (computable) {
        store_arg = fmt::format("aoti_trace::store({}, {})", store.address, store.per_lane ? "true" : "false");
        st.stored = true;
      }
      break;
    }
    return store_arg;
  }
};

// The traced kernel's table of its statements (aoti_trace::k_statements) and
// the hits the probes record.
std::string statement_table(const std::vector<TracedStatement>& statements) {
  std::string table = "namespace aoti_trace {\nconst Statement k_statements[] = {\n";
  for (const auto& st : statements) {
    table += fmt::format("    {{{}, {}, {}, {}, {}}},\n", cpp_text::string_literal(st.target),
                         cpp_text::string_literal(st.text), cpp_text::string_literal(join(st.operands, ",")),
                         cpp_text::string_literal(join(st.loops, ",")), st.vector_loop);
  }
  table += fmt::format("}};\nconst int k_statement_count = {};\nHit g_hits[{}][2];\n}}  // namespace aoti_trace\n\n",
                       statements.size(), statements.size());
  return table;
}

}  // namespace

TracedKernel trace_intermediates(const std::string& kernel_cpp, const std::string& kernel,
                                 const std::string& probe_header) {
  TracedKernel tk;
  const KernelSpan span = find_kernel_span(kernel_cpp, kernel);
  if (span.close == std::string::npos) {
    tk.problem = fmt::format("the definition of {} was not found in the kernel source", kernel);
    return tk;
  }
  const KernelNames names = kernel_names(kernel_cpp, kernel, span);

  // Lines of the body, each with the scope it starts in.
  auto lines =
      cpp_text::split_lines_copy(std::string_view(kernel_cpp).substr(span.open + 1, span.close - span.open - 1));
  const BodyScopes scopes = body_scopes(lines);

  StatementTracer tracer{lines, scopes, names, tk.statements};
  for (size_t i = 0; i < lines.size(); ++i) {
    tracer.trace_line(i);
  }
  if (tk.statements.empty()) {
    tk.problem = fmt::format(
        "{} computes no intermediate in the statements Inductor's cpp backend writes "
        "(`auto tmpN = ...;`)",
        kernel);
    return tk;
  }

  std::string table = statement_table(tk.statements);
  std::string body;
  for (size_t i = 0; i < lines.size(); ++i) {
    body += tracer.before[i] + lines[i] + "\n" + tracer.after[i];
  }
  tk.source = "// " + kernel +
              " with every intermediate probed (generated by aoti-bisect; `replay --intermediates`).\n" +
              kernel_cpp.substr(0, span.def) + "\n" + probe_header + "\n" + table +
              kernel_cpp.substr(span.def, span.open + 1 - span.def) + body + "}\n";
  return tk;
}

}  // namespace aoti_bisect
