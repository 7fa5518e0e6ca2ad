#include "text/pretokenizer.h"

#include <pcre2.h>

#include <cstring>
#include <iterator>

#include "core/error.h"
#include "text/pretokenizer_unicode.h"

namespace gossamer::text {

namespace {

// Unicode White_Space, which is what `\s` means in the Rust regex crate. NOTE: PCRE2's UCP `\s` is
// different (it omits U+0085), so the pattern spells the class out.
constexpr std::string_view kSpace =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

std::string build_pattern(bool with_delta) {
  using namespace unicode_delta;
  const std::string_view kExtraUpper = with_delta ? unicode_delta::kExtraUpper : "";
  const std::string_view kExtraLower = with_delta ? unicode_delta::kExtraLower : "";
  const std::string_view kExtraOther = with_delta ? unicode_delta::kExtraOther : "";
  const std::string_view kExtraNumber = with_delta ? unicode_delta::kExtraNumber : "";
  const std::string upper =
      std::string("\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}") + std::string(kExtraUpper) + std::string(kExtraOther);
  const std::string lower =
      std::string("\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}") + std::string(kExtraLower) + std::string(kExtraOther);
  const std::string number = std::string("\\p{N}") + std::string(kExtraNumber);
  const std::string letter_or_number =
      std::string("\\p{L}") + std::string(kExtraUpper) + std::string(kExtraLower) + std::string(kExtraOther) + number;
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

void* compile(const std::string& pattern, bool& jit) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                   &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    GOSSAMER_THROW("pre-tokenizer pattern does not compile at offset ", error_offset, ": ",
                   reinterpret_cast<const char*>(message));
  }
  jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return code;
}

bool is_delta_code_point(char32_t cp) {
  const auto& ranges = unicode_delta::kAllRanges;
  if (cp < ranges[0].first) return false;
  size_t lo = 0, hi = std::size(ranges);
  while (lo < hi) {  // first range whose last >= cp
    const size_t mid = (lo + hi) / 2;
    if (ranges[mid].last < cp) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < std::size(ranges) && ranges[lo].first <= cp;
}

}  // namespace

Pretokenizer::Pretokenizer() {
  for (const Variant variant : {Variant::kPlain, Variant::kFull}) {
    const size_t i = index(variant);
    patterns_[i] = build_pattern(variant == Variant::kFull);
    codes_[i] = compile(patterns_[i], jit_[i]);
  }
}

Pretokenizer::~Pretokenizer() {
  for (void* code : codes_) pcre2_code_free(static_cast<pcre2_code*>(code));
}

Pretokenizer::Variant Pretokenizer::variant_for(std::string_view text) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  const char32_t min_cp = unicode_delta::kAllRanges[0].first;
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, p + i, 8);
      if ((word & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    const uint8_t lead = p[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // NOTE: the text is valid UTF-8, so the lead byte gives the length and continuation bytes follow.
    char32_t cp;
    if (lead < 0xE0) {
      cp = (char32_t(lead & 0x1F) << 6) | (p[i + 1] & 0x3F);
      i += 2;
    } else if (lead < 0xF0) {
      cp = (char32_t(lead & 0x0F) << 12) | (char32_t(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
      i += 3;
    } else {
      cp = (char32_t(lead & 0x07) << 18) | (char32_t(p[i + 1] & 0x3F) << 12) | (char32_t(p[i + 2] & 0x3F) << 6) |
           (p[i + 3] & 0x3F);
      i += 4;
    }
    if (cp >= min_cp && is_delta_code_point(cp)) return Variant::kFull;
  }
  return Variant::kPlain;
}

bool Pretokenizer::next_piece(std::string_view text, size_t from, size_t& begin, size_t& end, Variant variant) const {
  if (from >= text.size()) return false;
  ThreadMatchState& state = thread_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t i = index(variant);
  auto* code = static_cast<const pcre2_code*>(codes_[i]);
  const int rc =
      jit_[i] ? pcre2_jit_match(code, subject, text.size(), from, 0, state.match_data, state.context)
              : pcre2_match(code, subject, text.size(), from, PCRE2_NO_UTF_CHECK, state.match_data, state.context);
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
