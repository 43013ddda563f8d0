// The one-kernel replay's host (aoti-bisect, lib/repro/replay.hpp): what a
// generated driver.cpp calls around the wrapper's call. Its definitions
// (replay_host.cpp) need LibTorch's heavy headers and are compiled once per
// torch and compiler; a driver includes only this and the AOTI runtime.
#pragma once

#include <torch/csrc/inductor/aoti_include/cpu.h>

#include <string>
#include <vector>

namespace replay {

using torch::aot_inductor::RAIIAtenTensorHandle;

enum Role { in = 1, out = 2, in_out = 3 };

extern std::string g_kernel;
extern std::string g_predicate;

// Prints "<kernel>: cannot run: <why>" and exits 2.
[[noreturn]] void cannot(const std::string& why);

// A saved tensor as the call's argument `name` (role: in, out or in_out).
RAIIAtenTensorHandle load(const std::string& name, const std::string& file, int role, bool initialized);
// A buffer the call writes that was not saved: allocated, zeroed.
RAIIAtenTensorHandle alloc(const std::string& name, std::vector<int64_t> shape, const std::string& dtype, int role);
// A saved view, laid out as the wrapper's view (sizes and strides).
RAIIAtenTensorHandle view(const std::string& name, const std::string& file, int64_t ndim, const int64_t* sizes,
                          const int64_t* strides);
// A tensor the call created (an extern call's `&bufN_handle`).
void created(const std::string& name, AtenTensorHandle h);
// A view the driver made over a loaded buffer, as the wrapper makes it (a
// part of a concatenation written in place): the call's argument `name`.
void adopt(const std::string& name, AtenTensorHandle h, int role);

// Before the call: what the inputs hold; outputs nobody wrote yet zeroed.
void before();
// Faults inside the call are the symptom of a fault culprit (exit 1), and a
// different failure for any other (exit 2).
void arm();
void disarm();

int judge_fault();
int judge_nonfinite();
int judge_mismatch(const std::string& name, const std::string& expected_file, double atol, double rtol);

// After the call of a kernel built with its intermediates probed
// (kernel.traced.cpp, `replay --intermediates`): prints what the probes saw,
// each element mapped to the argument it was stored into. Nothing otherwise.
void report_intermediates();

// Runs `body`; anything it raises outside the call means the replay cannot run.
int guarded(int (*body)());

}  // namespace replay
