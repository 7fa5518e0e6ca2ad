// tiny_render: turns tools/tiny_corpus.py's JSON lines into token ids for training (docs/tiny-model.md).
//
// The prompt of each line is rendered by the server's own request parser (parse_chat_request: system
// content, tools as a developer message, tool results) and Harmony renderer, so the model trains on
// exactly what `gossamer serve` feeds it; the completion is the assistant messages rendered one by one,
// the leading `<|start|>assistant` shared with the prompt's end removed, a final answer ending in
// <|return|> as the model must sample it.
//
// Output (little-endian uint32): per line [split (0 train, 1 eval), prompt_len, completion_len,
// prompt ids..., completion ids...]; OUT.domains gets one "split domain" line per record.
// Usage: tiny_render IN.jsonl OUT.bin
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/openai_request.h"
#include "text/harmony_json.h"
#include "text/harmony_renderer.h"
#include "text/tokenizer.h"

namespace {

using gossamer::text::TokenId;
namespace harmony = gossamer::text::harmony;

void put(std::ofstream& out, uint32_t value) {
  out.write(reinterpret_cast<const char*>(&value), 4);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tiny_render IN.jsonl OUT.bin\n");
    return 2;
  }
  try {
    const auto tokenizer = gossamer::text::Tokenizer::load_default();
    const harmony::HarmonyRenderer renderer(tokenizer);
    const TokenId start = *tokenizer->special_token_id("<|start|>");
    const TokenId end = *tokenizer->special_token_id("<|end|>");
    const TokenId ret = *tokenizer->special_token_id("<|return|>");
    gossamer::server::ApiContext context;
    context.served_model_name = "tiny";
    std::ifstream in(argv[1]);
    std::ofstream out(argv[2], std::ios::binary);
    std::ofstream domains(std::string(argv[2]) + ".domains");
    if (!in || !out || !domains) throw std::runtime_error("cannot open the input or the outputs");
    std::string line;
    int64_t count = 0, tokens = 0;
    while (std::getline(in, line)) {
      const auto row = nlohmann::ordered_json::parse(line);
      const auto request = gossamer::server::parse_chat_request(row.at("request"), context, renderer);
      const auto& prompt = request.prompt;
      std::vector<TokenId> completion;
      const auto messages = harmony::conversation_from_json({{"messages", row.at("completion")}}).messages;
      for (const auto& message : messages) {
        const auto ids = renderer.render_message(message).tokens;
        completion.insert(completion.end(), ids.begin(), ids.end());
      }
      // The prompt ends in <|start|>assistant: the completion's first two ids must be the same.
      if (prompt.size() < 2 || completion.size() < 3 || completion[0] != start || prompt[prompt.size() - 2] != start ||
          completion[1] != prompt.back()) {
        throw std::runtime_error("line " + std::to_string(count + 1) + ": prompt/completion do not join");
      }
      completion.erase(completion.begin(), completion.begin() + 2);
      if (messages.back().channel == "final") {
        if (completion.back() != end) throw std::runtime_error("a final message must end in <|end|>");
        completion.back() = ret;
      }
      const bool eval = row.at("split") == "eval";
      put(out, eval ? 1 : 0);
      put(out, static_cast<uint32_t>(prompt.size()));
      put(out, static_cast<uint32_t>(completion.size()));
      for (TokenId id : prompt) put(out, static_cast<uint32_t>(id));
      for (TokenId id : completion) put(out, static_cast<uint32_t>(id));
      domains << (eval ? "eval " : "train ") << row.at("domain").get<std::string>() << "\n";
      ++count;
      tokens += static_cast<int64_t>(prompt.size() + completion.size());
    }
    std::fprintf(stderr, "tiny_render: %lld conversations, %lld tokens\n", static_cast<long long>(count),
                 static_cast<long long>(tokens));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "tiny_render: %s\n", error.what());
    return 1;
  }
  return 0;
}
