#include "testing/test_backend.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/mapped_file.h"
#include "testing/fake_model.h"

namespace gossamer::test_support {

std::unique_ptr<model::Model> make_test_model(const TestBackend& backend, const text::Tokenizer& tokenizer) {
  std::this_thread::sleep_for(std::chrono::milliseconds(backend.load_delay_ms));
  engine::FakeModelOptions options;
  options.step_delay_us = backend.step_delay_ms * 1000;
  options.stop_one_in = backend.stop_one_in;
  options.max_position_embeddings = backend.max_position_embeddings;
  if (!backend.script_path.empty()) {
    const auto scripts = nlohmann::json::parse(read_text_file(backend.script_path));
    GOSSAMER_CHECK(scripts.is_array(), backend.script_path, ": expected an array of {trigger, output}");
    for (const auto& script : scripts) {
      engine::FakeScript fake;
      fake.trigger = tokenizer.encode_ordinary(script.at("trigger").get<std::string>());
      fake.output = tokenizer.encode(script.at("output").get<std::string>(), {}, true);
      options.scripts.push_back(std::move(fake));
    }
  }
  return std::make_unique<engine::FakeModel>(std::move(options));
}

}  // namespace gossamer::test_support
