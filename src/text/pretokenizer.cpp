#include "text/pretokenizer.h"

#include <pcre2.h>

#include "core/error.h"
#include "text/pretokenizer_unicode.h"

namespace gossamer::text {

namespace {

// Unicode White_Space, which is what `\s` means in the Rust regex crate. NOTE: PCRE2's UCP `\s` is
// different (it omits U+0085), so the pattern spells the class out.
constexpr std::string_view kSpace =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

std::string build_pattern() {
  using namespace unicode_delta;
  const std::string upper = std::string("\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}") + std::string(kExtraUpper) +
                            std::string(kExtraOther);
  const std::string lower = std::string("\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}") + std::string(kExtraLower) +
                            std::string(kExtraOther);
  const std::string number = std::string("\\p{N}") + std::string(kExtraNumber);
  const std::string letter_or_number = std::string("\\p{L}") + std::string(kExtraUpper) +
                                       std::string(kExtraLower) + std::string(kExtraOther) + number;
  const std::string space(kSpace);
  const std::string contraction = "(?i:'s|'t|'re|'ve|'m|'ll|'d)?";
  std::string p;
  p += "[^\\r\\n" + letter_or_number + "]?[" + upper + "]*[" + lower + "]+" + contraction;
  p += "|[^\\r\\n" + letter_or_number + "]?[" + upper + "]+[" + lower + "]*" + contraction;
  p += "|[" + number + "]{1,3}";
  p += "| ?[^" + space + letter_or_number + "]+[\\r\\n/]*";
  p += "|[" + space + "]*[\\r\\n]+";
  p += "|[" + space + "]+(?![^" + space + "])";
  p += "|[" + space + "]+";
  return p;
}

// Per-thread PCRE2 state. Match data and the JIT stack do not depend on the pattern, so one set per thread
// serves every Pretokenizer.
struct ThreadMatchState {
  pcre2_match_data* match_data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;

  ThreadMatchState() {
    match_data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
    GOSSAMER_ASSERT(match_data && context && jit_stack, "PCRE2 allocation failed");
    pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(match_data);
  }
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

Pretokenizer::Pretokenizer() : pattern_(build_pattern()) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    GOSSAMER_THROW("pre-tokenizer pattern does not compile at offset ", error_offset, ": ",
                   reinterpret_cast<const char*>(message));
  }
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  code_ = code;
}

Pretokenizer::~Pretokenizer() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

bool Pretokenizer::next_piece(std::string_view text, size_t from, size_t& begin, size_t& end) const {
  if (from >= text.size()) return false;
  ThreadMatchState& state = thread_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  auto* code = static_cast<const pcre2_code*>(code_);
  const int rc = jit_ ? pcre2_jit_match(code, subject, text.size(), from, 0, state.match_data, state.context)
                      : pcre2_match(code, subject, text.size(), from, PCRE2_NO_UTF_CHECK, state.match_data,
                                    state.context);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(rc, message, sizeof(message));
    GOSSAMER_THROW("pre-tokenizer failed at byte ", from, ": ", reinterpret_cast<const char*>(message));
  }
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.match_data);
  begin = ovector[0];
  end = ovector[1];
  GOSSAMER_ASSERT(end > begin, "pre-tokenizer matched an empty piece");
  return true;
}

}  // namespace gossamer::text
