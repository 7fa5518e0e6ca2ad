// Test helper of the engine GPU tests: the conditioned tiny checkpoint (model/dummy_checkpoint.h), written
// once per test process, loaded on cuda with --weights fp8.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "model/dummy_checkpoint.h"
#include "model/loader.h"

namespace gossamer::test {

inline std::string conditioned_tiny() {
  const auto dir = std::filesystem::temp_directory_path() / ("gossamer_engine_tiny." + std::to_string(::getpid()));
  if (!std::filesystem::exists(dir / "model.safetensors"))
    model::write_dummy_checkpoint(model::preset_config("tiny"), 0, dir.string(), model::DummyInit::kConditioned);
  return dir.string();
}

inline std::unique_ptr<model::Model> load_tiny() {
  model::ModelOptions options;
  options.weights = "fp8";
  return model::load_model(conditioned_tiny(), "cuda", options);
}

}  // namespace gossamer::test
