// Anything that looks weights up by checkpoint tensor name: a safetensors archive on disk or tensors
// built in memory. map_weights() turns a source into GptOssWeights, checking every tensor against the
// config (name, dtype, shape) and throwing gossamer::Error naming the tensor and its file on a mismatch.
#pragma once

#include <string>

#include "core/tensor.h"
#include "model/config.h"
#include "model/weights.h"

namespace gossamer::model {

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual bool contains(const std::string& name) const = 0;
  virtual TensorView tensor(const std::string& name) const = 0;
  // Where the tensor lives (a file path), for error messages.
  virtual std::string location(const std::string& name) const = 0;
  virtual std::string description() const = 0;
};

// Maps names of config.layout (Hugging Face or original) onto weight views.
GptOssWeights map_weights(const GptOssConfig& config, const TensorSource& source);

}  // namespace gossamer::model
