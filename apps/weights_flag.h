// The cuda weight format flag of every model command (--weights: model/loader.h ModelOptions::weights,
// model/cuda/cuda_weights.h WeightFormat).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace gossamer::app {

// Adds --weights to `cli`, filling `weights` (its default is the value `weights` holds: ModelOptions's
// "mxfp4"); refuses names other than mxfp4, fp8 and bf16. Returns the option (e.g. to set its group).
CLI::Option* add_weights_flag(CLI::App& cli, std::string& weights);

}  // namespace gossamer::app
