// The Harmony-aware token constraint of structured_output.h.
#include <algorithm>
#include <mutex>

#include "core/error.h"
#include "core/log.h"
#include "server/structured_output.h"
#include "text/grammar/grammar_matcher.h"
#include "text/grammar/token_masker.h"

namespace gossamer::server {

namespace {

namespace grammar = text::grammar;
using engine::TokenId;

// The vocabulary trie is built once per tokenizer (about a second) and shared by every request.
std::shared_ptr<const grammar::TokenVocabulary> shared_vocabulary(const text::Tokenizer& tokenizer) {
  static std::mutex mutex;
  static const text::Tokenizer* owner = nullptr;
  static std::shared_ptr<const grammar::TokenVocabulary> vocabulary;
  std::lock_guard<std::mutex> lock(mutex);
  if (owner != &tokenizer) {
    vocabulary = grammar::TokenVocabulary::build(tokenizer);
    owner = &tokenizer;
  }
  return vocabulary;
}

class HarmonyConstraint : public engine::TokenConstraint {
 public:
  // reasoning_budget: tokens of reasoning allowed while an answer is owed (0 = unbounded).
  HarmonyConstraint(std::shared_ptr<const StructuredOutputSpec> spec, const text::Tokenizer& tokenizer,
                    int32_t reasoning_budget)
      : spec_(std::move(spec)),
        tokenizer_(tokenizer),
        masker_(shared_vocabulary(tokenizer)),
        reasoning_budget_(reasoning_budget) {
    const auto special = [&](const char* text) {
      const auto id = tokenizer.special_token_id(text);
      GOSSAMER_CHECK(id.has_value(), "tokenizer without ", text);
      return *id;
    };
    start_ = special("<|start|>"), end_ = special("<|end|>"), message_ = special("<|message|>");
    return_ = special("<|return|>"), call_ = special("<|call|>"), end_of_text_ = special("<|endoftext|>");
    const auto encode = [&](const std::string& text) { return tokenizer.encode(text, {}, true); };
    // Forced headers (after the role): the alternatives a message may open with.
    // tool_choice none: analysis or final; required / named: analysis or a call of an allowed tool; auto
    // with a response_format: analysis, final or any tool call; plain auto: free.
    std::vector<std::string> headers;
    const ToolChoice choice = spec_->tool_choice;
    if (choice != ToolChoice::kAuto || spec_->response != nullptr) {
      analysis_alternative_ = 0;
      headers.push_back("<|channel|>analysis<|message|>");
    }
    if (choice == ToolChoice::kNone || (choice == ToolChoice::kAuto && spec_->response != nullptr)) {
      headers.push_back("<|channel|>final<|message|>");
    }
    if (choice != ToolChoice::kNone && !headers.empty()) {
      for (const auto& [name, grammar] : spec_->tools) {
        if (choice != ToolChoice::kNamed || name == spec_->named_tool) {
          headers.push_back("<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>");
        }
      }
    }
    for (const std::string& header : headers) {
      first_headers_.push_back(encode(header));
      later_headers_.push_back(encode("assistant" + header));
    }
  }

  bool fill_mask(std::span<uint32_t> mask) override {
    switch (phase_) {
      case Phase::kHeader: {
        const auto& alternatives = first_message_ ? first_headers_ : later_headers_;
        if (alternatives.empty()) return false;
        std::fill(mask.begin(), mask.end(), 0u);
        for (size_t i = 0; i < alternatives.size(); ++i) {
          if (static_cast<int>(i) == analysis_alternative_ && reasoning_spent()) continue;  // no more reasoning
          const auto& alternative = alternatives[i];
          if (alternative.size() > header_ids_.size() &&
              std::equal(header_ids_.begin(), header_ids_.end(), alternative.begin())) {
            allow(mask, alternative[header_ids_.size()]);
          }
        }
        return true;
      }
      case Phase::kContent: {
        // Only a turn that must end in JSON or a tool call restricts free content: it cannot end the turn
        // or open anything here, only end the message (<|end|>).
        const bool must_answer = spec_->response != nullptr || forcing_tools();
        if (!must_answer || final_channel_) return false;
        if (reasoning_spent()) {  // the budget is used: the message can only end
          std::fill(mask.begin(), mask.end(), 0u);
          allow(mask, end_);
          return true;
        }
        if (content_mask_.size() != mask.size()) {  // every ordinary token, and of the specials only <|end|>
          content_mask_.assign(mask.size(), ~0u);
          for (auto id = static_cast<TokenId>(text::kNumOrdinaryTokens); id < static_cast<TokenId>(mask.size() * 32);
               ++id) {
            if (id != end_) forbid(content_mask_, id);
          }
        }
        std::copy(content_mask_.begin(), content_mask_.end(), mask.begin());
        return true;
      }
      case Phase::kAfterEnd:
        if (first_headers_.empty() && spec_->response == nullptr) return false;
        std::fill(mask.begin(), mask.end(), 0u);
        allow(mask, start_);
        return true;
      case Phase::kJson:
        masker_.fill_mask(*matcher_, mask);
        if (matcher_->can_end()) allow(mask, terminator_);
        return true;
      case Phase::kDone: return false;
    }
    return false;
  }

  void accept(TokenId token) override {
    switch (phase_) {
      case Phase::kHeader:
        header_ids_.push_back(token);
        if (token == message_) open_content();
        if (token == return_ || token == call_ || token == end_of_text_ || token == end_) phase_ = Phase::kDone;
        return;
      case Phase::kContent:
        if (!final_channel_ && (spec_->response != nullptr || forcing_tools())) ++reasoning_used_;
        if (token == end_) phase_ = Phase::kAfterEnd;
        if (token == return_ || token == call_ || token == end_of_text_) phase_ = Phase::kDone;
        return;
      case Phase::kAfterEnd:
        if (token == start_) {
          phase_ = Phase::kHeader;
          first_message_ = false;
          header_ids_.clear();
        } else {
          phase_ = Phase::kDone;  // not Harmony any more (only when nothing forced <|start|>)
        }
        return;
      case Phase::kJson:
        if (token == terminator_) {
          phase_ = Phase::kDone;
        } else if (tokenizer_.is_special(token) || !matcher_->advance(tokenizer_.token_bytes(token))) {
          GOSSAMER_LOG_ERROR("structured output: token ", token,
                             " outside the grammar was sampled; constraint released");
          phase_ = Phase::kDone;
        }
        return;
      case Phase::kDone: return;
    }
  }

 private:
  enum class Phase : uint8_t { kHeader, kContent, kJson, kAfterEnd, kDone };

  bool forcing_tools() const {
    return spec_->tool_choice == ToolChoice::kRequired || spec_->tool_choice == ToolChoice::kNamed;
  }
  bool reasoning_spent() const { return reasoning_budget_ > 0 && reasoning_used_ >= reasoning_budget_; }
  static void allow(std::span<uint32_t> mask, TokenId token) {
    mask[static_cast<size_t>(token) / 32] |= 1u << (token % 32);
  }
  static void forbid(std::span<uint32_t> mask, TokenId token) {
    mask[static_cast<size_t>(token) / 32] &= ~(1u << (token % 32));
  }

  // The header is complete: decide what the content is from its channel and recipient.
  void open_content() {
    const std::string header = tokenizer_.decode_bytes(header_ids_);
    const auto word_after = [&](const std::string& marker) -> std::string {
      const size_t at = header.find(marker);
      if (at == std::string::npos) return {};
      const size_t begin = at + marker.size();
      size_t end = begin;
      while (end < header.size() && header[end] != ' ' && header[end] != '<') ++end;
      return header.substr(begin, end - begin);
    };
    const std::string channel = word_after("<|channel|>");
    const std::string recipient = word_after("to=");
    final_channel_ = channel == "final";
    phase_ = Phase::kContent;
    if (recipient.rfind("functions.", 0) == 0) {
      const auto found = spec_->tools.find(recipient.substr(10));
      if (found != spec_->tools.end()) {
        matcher_.emplace(found->second);
        terminator_ = call_;
        phase_ = Phase::kJson;
      }
    } else if (final_channel_ && spec_->response) {
      matcher_.emplace(spec_->response);
      terminator_ = return_;
      phase_ = Phase::kJson;
    }
  }

  std::shared_ptr<const StructuredOutputSpec> spec_;
  const text::Tokenizer& tokenizer_;
  grammar::TokenMasker masker_;
  TokenId start_ = 0, end_ = 0, message_ = 0, return_ = 0, call_ = 0, end_of_text_ = 0;
  std::vector<std::vector<TokenId>> first_headers_, later_headers_;  // forced alternatives (empty = free)
  std::vector<uint32_t> content_mask_;                               // content of a message while an answer is owed

  Phase phase_ = Phase::kHeader;  // generation starts right after the prompt's `<|start|>assistant`
  bool first_message_ = true;
  bool final_channel_ = false;
  int32_t reasoning_budget_ = 0;   // 0 = unbounded
  int32_t reasoning_used_ = 0;     // content tokens of non-final messages while an answer is owed
  int analysis_alternative_ = -1;  // index of the analysis header among the forced alternatives
  std::vector<TokenId> header_ids_;
  std::optional<grammar::GrammarMatcher> matcher_;
  TokenId terminator_ = 0;
};

}  // namespace

std::shared_ptr<engine::TokenConstraint> make_structured_output_constraint(
    std::shared_ptr<const StructuredOutputSpec> spec, const text::Tokenizer& tokenizer, int32_t max_tokens) {
  return std::make_shared<HarmonyConstraint>(std::move(spec), tokenizer, max_tokens > 0 ? max_tokens / 2 : 0);
}

}  // namespace gossamer::server
