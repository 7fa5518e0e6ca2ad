// The embedded default model: a tiny gpt-oss-architecture model trained on a synthetic Harmony corpus
// (docs/tiny-model.md): it reasons in the analysis channel, answers in the final channel and calls the
// function tools it is offered (small arithmetic, words, weekdays and dates, units, get_weather, add,
// lookup). Full o200k_harmony vocabulary (201,088 rows; the rows its corpus never uses share one
// embedding and one unembedding row), MXFP4 experts, the Hugging Face checkpoint layout.
//
// The repository keeps it zstd-compressed (models/tiny/); the build decompresses it into
// BUILD/models/tiny/, which is where the binary looks unless $GOSSAMER_EMBEDDED_MODEL_DIR names another
// directory. It runs on the CPU backend. The random model that used to be the default stays available as
// `--load-format dummy --preset embedded` (and `--preset tiny`), for tests that need an adversary.
#pragma once

#include <memory>
#include <string>

#include "model/model.h"

namespace gossamer::model {

// Name reported in /v1/models for the embedded default.
inline constexpr const char* kEmbeddedDefaultName = "gossamer-embedded-tiny-trained";
// One line for the load log.
inline constexpr const char* kEmbeddedDefaultDescription =
    "the embedded default: a tiny gpt-oss model trained to speak Harmony (docs/tiny-model.md), on the CPU";

// $GOSSAMER_EMBEDDED_MODEL_DIR, else the build's decompressed copy of models/tiny.
std::string embedded_model_dir();

// Loads the embedded checkpoint on the CPU backend; throws gossamer::Error saying how to get it when the
// directory lacks it (zstd missing at build time).
std::unique_ptr<Model> make_embedded_default_model();

}  // namespace gossamer::model
