#pragma once
// Shared by the replay's sources only (replay.cpp, replay_driver.cpp): the
// culprit's call as the driver makes it, and the driver's text.

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "repro/replay.hpp"

namespace aoti_bisect::repro {

// What the driver declares before the call, and the problem, if any.
struct Gen {
  const ReplaySpec& spec;
  const Culprit& c;
  std::map<std::string, std::string> saved;     // tensor name -> file
  std::map<std::string, std::string> expected;  // tensor name -> file of its eager value
  std::string problem;
  std::vector<std::string> decls;  // driver lines before the call
  std::vector<std::string> after;  // driver lines after it
  std::set<std::string> declared;
  std::set<std::string> files;
  std::map<std::string, std::string> alias_of;     // a view of a live buffer -> that buffer (WrapperInfo::aliases)
  std::vector<std::pair<std::string, int>> views;  // views the call passes, made over their buffer after the loads
  std::vector<std::string> after_loads;            // driver lines after the loads, before the call

  void need(const std::string& why);

  // A tensor the call passes, declared once under its wrapper name. A view
  // of a live buffer (a part of a concatenation written in place) is made
  // over that buffer as the wrapper makes it, so that what the call writes
  // through it is in the buffer too (make_views).
  void tensor(const std::string& name, int role);

  // Each scalar's declaration, and those it needs in turn (`int64_t s77 =
  // arg4_1_size[0];` needs `auto arg4_1_size = arg4_1.sizes();`, whose
  // graph input is given by its sizes as the run saw them). Inserted in
  // front, so a declaration comes after what it needs.
  void declare_scalars(std::vector<std::string> todo, const std::vector<std::string>& lines, int line);

  static bool known_word(const std::string& id);

  // The views the call passes, over their buffers, as the wrapper makes them
  // (`auto buf3 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf4, 2, int_array_8, int_array_9, 32L));`),
  // after the buffers' loads; registered for the judge under their names.
  void make_views(const std::vector<std::string>& lines, int line);
};

// The culprit's call in the wrapper, and what the replay needs to make it.
struct ReplayCall {
  std::vector<std::string> lines;  // the wrapper's
  const CallSite* site = nullptr;  // into `wrapper`
  WrapperInfo wrapper;
  std::string call;                    // its text
  bool proxy = false;                  // through the proxy executor (a custom operator)
  std::string kernel_cpp;              // a cpp kernel's definition, alone
  std::vector<std::string> params;     // its parameters
  std::string statement;               // the driver's call
  std::vector<std::string> libraries;  // the operator libraries' file names beside the replay
};

// The call site the culprit is in the wrapper (by its wrapper site, else by
// its kernel's name), and whether it can be replayed (Gen::need says why not).
ReplayCall locate_call(Gen& g, const std::string& wrapper_source, const std::string& kernel_source,
                       const std::string& extern_json);

// The tensors the call passes declared (a cpp kernel's pointer arguments
// by their parameters' roles), the call statement, the views made.
void prepare_call(Gen& g, ReplayCall& rc, const std::string& extern_json);

// The judgement the driver ends with: the failure's own, or (wrong values)
// the output against its saved eager value.
std::string predicate_call(Gen& g);

// driver.cpp: the kernel's declaration, the tensors loaded, the call armed,
// the judgement.
std::string driver_source(const Gen& g, const ReplayCall& rc, const std::string& what, const std::string& judge);

}  // namespace aoti_bisect::repro
