#include "model/embedded_default.h"

#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "model/loader.h"

#ifndef GOSSAMER_EMBEDDED_MODEL_DIR
#error "GOSSAMER_EMBEDDED_MODEL_DIR must name the build's models/tiny directory (src/model/CMakeLists.txt)"
#endif

namespace gossamer::model {

std::string embedded_model_dir() {
  const char* override_dir = std::getenv("GOSSAMER_EMBEDDED_MODEL_DIR");
  return override_dir != nullptr && *override_dir != '\0' ? override_dir : GOSSAMER_EMBEDDED_MODEL_DIR;
}

std::unique_ptr<Model> make_embedded_default_model() {
  namespace fs = std::filesystem;
  const fs::path dir = embedded_model_dir();
  GOSSAMER_CHECK(fs::exists(dir / "config.json") && fs::exists(dir / "model.safetensors"),
                 "the embedded default model is not at ", dir.string(),
                 ": the build decompresses models/tiny/model.safetensors.zst there (needs the zstd program: "
                 "bash scripts/setup.sh, then rebuild), or set GOSSAMER_EMBEDDED_MODEL_DIR");
  return load_model(dir.string(), "cpu");
}

}  // namespace gossamer::model
