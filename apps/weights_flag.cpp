#include "weights_flag.h"

namespace gossamer::app {

CLI::Option* add_weights_flag(CLI::App& cli, std::string& weights) {
  return cli
      .add_option("--weights", weights,
                  "cuda weight format: mxfp4 (default: MXFP4 experts as shipped, FP8 128x128 block-scaled dense "
                  "layers) | fp8 (the experts as FP8 too: 1.9x the expert memory) | bf16 (accuracy baseline)")
      ->check(CLI::IsMember({"mxfp4", "fp8", "bf16"}));
}

}  // namespace gossamer::app
