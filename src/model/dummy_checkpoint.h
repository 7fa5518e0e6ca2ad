// Deterministic random gpt-oss checkpoints of real or small shapes, in the Hugging Face layout.
//
// Magnitudes keep activations O(1) and make the sinks matter: dense weights ~ N(0, 1/in), biases ~ 0.1·N,
// norms ~ 1 + 0.1·N, sinks ~ U(−2, 4), expert MXFP4 codes uniform with e8m0 scales giving gate_up outputs
// of std ≈ 3 (so the ±7 SwiGLU clamps are exercised) and down outputs of std ≈ 1. Every tensor's
// content depends only on (seed, tensor name), never on the order of generation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/model.h"
#include "model/safetensors_writer.h"
#include "model/weights.h"

namespace gossamer::model {

// Presets: "tiny" (CI-sized, a few MB), "20b", "120b" (published shapes), "embedded" (the embedded
// default: tiny layers, full 201,088-token vocabulary). Throws on an unknown name.
GptOssConfig preset_config(const std::string& preset);

struct DummyTensor {
  std::string name;  // Hugging Face name
  DType dtype;
  Shape shape;
  SafetensorsWriter::Producer produce;
};

std::vector<DummyTensor> dummy_tensors(const GptOssConfig& config, uint64_t seed);

// Writes DIR/config.json and the safetensors (sharded above 4 GiB, with an index), streaming tensors.
void write_dummy_checkpoint(const GptOssConfig& config, uint64_t seed, const std::string& dir);

// The same weights built in host memory (tensors generated in parallel). `storage` owns the bytes the
// views in `weights` point into.
struct DummyWeights {
  std::shared_ptr<const void> storage;
  GptOssWeights weights;
};
DummyWeights make_dummy_weights(const GptOssConfig& config, uint64_t seed);

// A CPU model over make_dummy_weights (no disk).
std::unique_ptr<Model> make_dummy_cpu_model(const GptOssConfig& config, uint64_t seed);

}  // namespace gossamer::model
