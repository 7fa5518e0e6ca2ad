// Deterministic benchmark corpora for the tokenizer (bench/text). Every corpus is built from the repository,
// the tokenizer's own vocabulary and, where present, fixed system text files, mixed by a seeded std::mt19937,
// so that a build directory and the repository are all a machine needs to rebuild them.
//
//  - mixed:        the original ~1.5 MB mix (licence prose, libstdc++ headers, ten scripts, emoji, numbers,
//                  CRLF/tab/NBSP, contractions, Harmony tags); kept byte-identical to earlier PERF.md runs.
//  - english:      English prose: the Debian licence texts (/usr/share/common-licenses, when present) and the
//                  prose paragraphs of the repository's Markdown, in shuffled paragraphs.
//  - code:         the repository's own sources (C++, CUDA, Python, JavaScript, shell), in shuffled chunks.
//  - cjk:          Chinese, Japanese and Korean sentences whose words are drawn (Zipf-like, by rank) from the
//                  o200k vocabulary's tokens of those scripts, joined and punctuated as the languages are.
//  - multilingual: the same kind of sentences in 21 scripts, plus emoji, numbers and code chunks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace gossamer::bench {

inline const std::vector<std::string>& corpus_names() {
  static const std::vector<std::string> names = {"multilingual", "english", "code", "cjk", "mixed"};
  return names;
}

// Builds the named corpus (about `target_bytes`, valid UTF-8). `tokenizer` supplies the vocabulary of the
// synthetic corpora. Throws gossamer::Error on an unknown name or a missing source.
std::string build_corpus(std::string_view name, size_t target_bytes, const text::Tokenizer& tokenizer);

}  // namespace gossamer::bench
