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

// Presets: "tiny" (CI-sized, a few MB), "20b", "120b" (published shapes), "20b-2layers" (20b's shapes
// with 2 layers: large goldens from transformers stay affordable), "embedded" (the random
// model that was the embedded default before the trained one: tiny layers, full 201,088-token vocabulary). Throws on an
// unknown name.
GptOssConfig preset_config(const std::string& preset);

// How the random weights are scaled. `standard` (the default, byte-stable: the tiny golden depends on it)
// gives every layer an O(1) update of an O(1) residual stream: a chaotic map in which a bf16 rounding of
// the activations alone moves the tiny model's logits by ~10%. `conditioned` is closer to a trained
// model's statistics, so that accuracy bounds measure the arithmetic rather than the chaos: residual
// updates (o_proj, expert down) scaled by 0.1, router weights by 4 (clear top-4 margins), and the
// unembedding tied to the embedding (÷√hidden), so that logits have a clear winner as a trained model's do.
enum class DummyInit { kStandard, kConditioned };
DummyInit parse_dummy_init(const std::string& name);  // "standard" | "conditioned"; throws otherwise

struct DummyTensor {
  std::string name;  // Hugging Face name
  DType dtype;
  Shape shape;
  SafetensorsWriter::Producer produce;
};

std::vector<DummyTensor> dummy_tensors(const GptOssConfig& config, uint64_t seed,
                                       DummyInit init = DummyInit::kStandard);

// Writes DIR/config.json and the safetensors (sharded above 4 GiB, with an index), streaming tensors.
void write_dummy_checkpoint(const GptOssConfig& config, uint64_t seed, const std::string& dir,
                            DummyInit init = DummyInit::kStandard);

// The same weights built in host memory (tensors generated in parallel). `storage` owns the bytes the
// views in `weights` point into.
struct DummyWeights {
  std::shared_ptr<const void> storage;
  GptOssWeights weights;
};
DummyWeights make_dummy_weights(const GptOssConfig& config, uint64_t seed, DummyInit init = DummyInit::kStandard);

// A CPU model over make_dummy_weights (no disk).
std::unique_ptr<Model> make_dummy_cpu_model(const GptOssConfig& config, uint64_t seed,
                                            DummyInit init = DummyInit::kStandard);

}  // namespace gossamer::model
