// The scripted outputs the fake test backend plays (`gossamer serve --test-backend fake --test-script FILE`):
// a user message equal to a trigger makes the model emit that Harmony text.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace gossamer::server::testing {

inline std::string repeated(const std::string& piece, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += piece;
  return out;
}

inline std::string write_script_file() {
  const nlohmann::json scripts = nlohmann::json::array({
      // First: a tool result holding this word ends a tool round trip (the request also holds SCRIPTTOOL).
      {{"trigger", " SCRIPTWEATHERDONE"},
       {"output",
        "<|channel|>analysis<|message|>The tool says sunny.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>It is sunny in Paris.<|return|>"}},
      {{"trigger", "Please answer SCRIPTANSWER"},
       {"output",
        "<|channel|>analysis<|message|>The user wants 42. Say 42.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>The answer is 42.<|return|>"}},
      {{"trigger", "Please call SCRIPTTOOL"},
       {"output",
        "<|channel|>analysis<|message|>Need weather for Paris.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        "<|message|>{\"city\":\"Paris\",\"unit\":\"celsius\"}<|call|>"}},
      {{"trigger", "Please break SCRIPTBROKEN"},
       {"output", "<|channel|>final<|message|>Hello<|end|>garbage after the end<|return|>"}},
      {{"trigger", "Please call SCRIPTNORECIPIENT"}, {"output", "<|channel|>commentary<|message|>{}<|call|>"}},
      {{"trigger", "Please call SCRIPTBADJSON"},
       {"output", "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": Par<|call|>"}},
      {{"trigger", "Please say SCRIPTUTF"}, {"output", "<|channel|>final<|message|>héllo 🌍 日本語<|return|>"}},
      {{"trigger", "Please repeat SCRIPTREPEAT"},
       {"output", "<|channel|>final<|message|>" + repeated(" ha", 40) + "<|return|>"}},
  });
  char pattern[] = "/tmp/gossamer-script-XXXXXX";
  const int fd = mkstemp(pattern);
  close(fd);
  std::ofstream(pattern) << scripts.dump();
  return pattern;
}

}  // namespace gossamer::server::testing
