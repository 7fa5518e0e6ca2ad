// The parallelism flags of every model command, with vLLM's names: -tp/--tensor-parallel-size,
// --enable-expert-parallel (EP over the TP group), -dp/--data-parallel-size.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "model/loader.h"  // ModelOptions
#include "model/model.h"
#include "model/sharding.h"

namespace gossamer::app {

// Adds the three flags to `cli`, filling `layout`.
void add_parallel_flags(CLI::App& cli, model::ParallelLayout& layout, const std::string& group = "Parallelism");

// argv with vLLM's multi-letter short flags (-tp N, -tp=N, -dp N, -dp=N) spelt long (CLI11 2.1 has no
// multi-letter short options). Keep the result alive while CLI11 parses the pointers.
class VllmArgs {
 public:
  VllmArgs(int argc, char** argv);
  int argc() const { return static_cast<int>(pointers_.size()); }
  char** argv() { return pointers_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<char*> pointers_;
};

// Before loading: refuses sizes < 1 and, on cuda, a layout needing more GPUs (tensor-parallel ×
// data-parallel; one with colocate_on_gpu0) than are visible. The loader checks the rest of the layout
// against the model. `serve` takes every valid layout (replica r on GPUs [r·TP, (r+1)·TP)).
void check_parallel_layout(const model::ModelOptions& options, const std::string& device);

// check_parallel_layout, then refuses data_parallel > 1: the model commands run one replica (the
// replicas behind one server are `serve -dp`).
void check_single_replica(const model::ModelOptions& options, const std::string& device);

// "TP2 EP2 DP1 on cpu (2 simulated ranks)" style line for the load summary; on cuda with the weight format
// and the GPU bytes of the weights.
std::string layout_summary(const model::Model& model, const model::ModelOptions& options);

// Where the layout's ranks sit on cuda (model/loader.h gpu_of): "GPU 0", "GPUs 0-1", "replicas on GPUs 0-1,
// 2-3", or "every rank on GPU 0 (colocated)".
std::string placement_summary(const model::ModelOptions& options);

}  // namespace gossamer::app
