#pragma once
// ATen, then doctest: c10's glog-style CHECK macros would shadow doctest's,
// so they go before doctest's are defined. ATen's header, not
// <torch/torch.h>: the C++ frontend doubles each file's compile time.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/jit/serialization/pickle.h>
#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_LE
#undef CHECK_GT
#undef CHECK_GE
#include <doctest/doctest.h>
