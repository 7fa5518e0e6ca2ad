// Test helper of the engine GPU tests: the conditioned tiny checkpoint (model/dummy_checkpoint.h), written
// once per test process, loaded on cuda with --weights fp8, and the engine configuration the tests run it with.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "engine/engine_config.h"
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

// 512 blocks of 16 positions, up to 64 sequences of 512 tokens.
inline engine::EngineConfig tiny_engine_config() {
  engine::EngineConfig config;
  config.block_size = 16;
  config.num_kv_blocks = 512;
  config.max_num_seqs = 64;
  config.max_model_len = 512;
  return config;
}

}  // namespace gossamer::test
