// A gpt-oss checkpoint on disk: config + memory-mapped safetensors, in the Hugging Face layout
// (DIR/config.json + model.safetensors[.index.json]) or the `original/` layout
// (DIR/original/{config.json, model.safetensors[.index.json]} or those files directly in DIR).
//
// Contract: open() checks every tensor the model uses against the config (name, dtype, shape) and
// throws gossamer::Error naming the tensor and the file on the first problem. The returned weights
// point into the mappings and stay valid while the Checkpoint lives.
#pragma once

#include <memory>
#include <string>

#include "model/config.h"
#include "model/safetensors.h"
#include "model/weights.h"

namespace gossamer::model {

class Checkpoint {
 public:
  static std::unique_ptr<Checkpoint> open(const std::string& dir);

  const GptOssConfig& config() const { return config_; }
  const GptOssWeights& weights() const { return weights_; }
  const SafetensorsArchive& archive() const { return archive_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  GptOssConfig config_;
  SafetensorsArchive archive_;
  GptOssWeights weights_;
};

}  // namespace gossamer::model
