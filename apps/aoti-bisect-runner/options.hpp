#pragma once
// aoti-bisect-runner's command line (options.cpp).

#include <CLI/CLI.hpp>

#include "torchside/runner.hpp"

namespace aoti_bisect::torchside {

// Every option of one run, into `opt`.
void define_runner_options(CLI::App& app, RunnerOptions& opt);

}  // namespace aoti_bisect::torchside
