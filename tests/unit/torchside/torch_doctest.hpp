#pragma once
// LibTorch, then doctest: c10's glog-style CHECK macros would shadow
// doctest's, so they go before doctest's are defined.
#include <torch/torch.h>
#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_LE
#undef CHECK_GT
#undef CHECK_GE
#include <doctest/doctest.h>
