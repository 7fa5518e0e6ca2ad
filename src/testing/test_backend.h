// The scripted test backend of `gossamer serve --test-backend fake [--test-script FILE ...]`: a FakeModel
// (testing/fake_model.h) whose scripts are Harmony text, tokenized with the server's tokenizer.
//
// NOTE: this is a test double carried by the binary only so that the end-to-end tests (tests/server) can
// drive a real server process with exact, model-free outputs. The product path never reaches it: `serve`
// builds it only when the hidden --test-backend flag is given, and no other command links to it.
//
// Contract: make_test_model throws gossamer::Error when the script file is unreadable or not a JSON array of
// {"trigger": text, "output": harmony text}.
#pragma once

#include <memory>
#include <string>

#include "model/model.h"
#include "text/tokenizer.h"

namespace gossamer::test_support {

struct TestBackend {
  std::string kind;         // "" (off) or "fake"
  std::string script_path;  // JSON [{"trigger": text, "output": harmony text}]
  int step_delay_ms = 0;
  int stop_one_in = 0;
  int max_position_embeddings = 8192;
  int load_delay_ms = 0;  // make_test_model takes this long, as a real load does (the loading-state tests)
};

std::unique_ptr<model::Model> make_test_model(const TestBackend& backend, const text::Tokenizer& tokenizer);

}  // namespace gossamer::test_support
