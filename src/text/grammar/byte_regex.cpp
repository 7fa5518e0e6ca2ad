#include "text/grammar/byte_regex.h"

#include <bitset>
#include <map>

namespace gossamer::text::grammar {

using ByteSet = std::bitset<256>;

namespace {

constexpr int kMaxCount = 64;
constexpr size_t kMaxNfaStates = 4096;
constexpr size_t kMaxDfaStates = 4096;

// Bytes a regex may ever match: printable ASCII without `"` and `\`.
ByteSet allowed_bytes() {
  ByteSet set;
  for (int c = 0x20; c < 0x7f; ++c) {
    if (c != '"' && c != '\\') set.set(static_cast<size_t>(c));
  }
  return set;
}

struct Ast {
  enum Kind { kSet, kConcat, kAlt, kRepeat } kind = kSet;
  ByteSet set;
  std::vector<Ast> children;
  int min = 0, max = 0;  // kRepeat; max < 0 = unbounded
};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Ast parse() {
    if (!text_.empty() && text_.front() == '^') ++pos_;
    Ast ast = alternation();
    if (pos_ + 1 == text_.size() && text_[pos_] == '$') ++pos_;
    if (pos_ != text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    return ast;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw RegexError("pattern '" + std::string(text_) + "': " + what + " at offset " + std::to_string(pos_));
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }

  Ast alternation() {
    Ast first = concatenation();
    if (at_end() || peek() != '|') return first;
    Ast alt;
    alt.kind = Ast::kAlt;
    alt.children.push_back(std::move(first));
    while (!at_end() && peek() == '|') {
      ++pos_;
      alt.children.push_back(concatenation());
    }
    return alt;
  }

  Ast concatenation() {
    Ast cat;
    cat.kind = Ast::kConcat;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && pos_ + 1 == text_.size()) break;
      cat.children.push_back(quantified());
    }
    return cat;
  }

  int number() {
    int value = 0, digits = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      value = value * 10 + (peek() - '0');
      ++pos_;
      if (++digits > 4) fail("count too large");
    }
    if (digits == 0) fail("expected a count");
    return value;
  }

  Ast quantified() {
    Ast atom_ast = atom();
    while (!at_end()) {
      int min = 0, max = 0;
      const char c = peek();
      if (c == '?') {
        min = 0, max = 1;
      } else if (c == '*') {
        min = 0, max = -1;
      } else if (c == '+') {
        min = 1, max = -1;
      } else if (c == '{') {
        ++pos_;
        min = number();
        max = min;
        if (!at_end() && peek() == ',') {
          ++pos_;
          max = !at_end() && peek() == '}' ? -1 : number();
        }
        if (at_end() || peek() != '}') fail("expected '}'");
        if (min > kMaxCount || max > kMaxCount || (max >= 0 && max < min)) fail("bad repetition count");
      } else {
        break;
      }
      ++pos_;
      Ast repeat;
      repeat.kind = Ast::kRepeat;
      repeat.min = min;
      repeat.max = max;
      repeat.children.push_back(std::move(atom_ast));
      atom_ast = std::move(repeat);
    }
    return atom_ast;
  }

  ByteSet escape_set(char c) {
    ByteSet set;
    const auto range = [&](char lo, char hi) {
      for (int x = lo; x <= hi; ++x) set.set(static_cast<size_t>(x));
    };
    switch (c) {
      case 'd': range('0', '9'); break;
      case 'w': range('0', '9'), range('a', 'z'), range('A', 'Z'), set.set('_'); break;
      case 's': set.set(' '); break;  // only the space: tabs and newlines need escapes in JSON
      case 'D':
      case 'W':
      case 'S': set = allowed_bytes() & ~escape_set(static_cast<char>(c - 'A' + 'a')); break;
      default:
        if (std::string_view(".-+*?()[]{}|^$/\\:#@&~!%=,;<>'`_ ").find(c) == std::string_view::npos) {
          fail(std::string("unsupported escape \\") + c);
        }
        set.set(static_cast<unsigned char>(c));
    }
    return set;
  }

  Ast atom() {
    Ast ast;
    const char c = peek();
    ++pos_;
    if (c == '(') {
      if (!at_end() && peek() == '?') {
        if (pos_ + 1 < text_.size() && text_[pos_ + 1] == ':') {
          pos_ += 2;
        } else {
          fail("unsupported group");
        }
      }
      ast = alternation();
      if (at_end() || peek() != ')') fail("expected ')'");
      ++pos_;
      return ast;
    }
    if (c == '[') return class_atom();
    if (c == '.') {
      ast.set = allowed_bytes();
    } else if (c == '\\') {
      if (at_end()) fail("trailing backslash");
      ast.set = escape_set(peek());
      ++pos_;
    } else if (std::string_view("*+?{})|").find(c) != std::string_view::npos) {
      --pos_;
      fail("nothing to repeat or unbalanced");
    } else {
      ast.set.set(static_cast<unsigned char>(c));
    }
    ast.set &= allowed_bytes();
    return ast;
  }

  Ast class_atom() {
    Ast ast;
    bool negate = false;
    if (!at_end() && peek() == '^') {
      negate = true;
      ++pos_;
    }
    bool first = true;
    while (!at_end() && (peek() != ']' || first)) {
      first = false;
      ByteSet item;
      unsigned char lo = static_cast<unsigned char>(peek());
      ++pos_;
      if (lo == '\\') {
        if (at_end()) fail("trailing backslash");
        item = escape_set(peek());
        lo = static_cast<unsigned char>(peek());
        ++pos_;
        if (item.count() != 1) {
          ast.set |= item;
          continue;
        }
      }
      if (pos_ + 1 < text_.size() && peek() == '-' && text_[pos_ + 1] != ']') {
        ++pos_;
        unsigned char hi = static_cast<unsigned char>(peek());
        ++pos_;
        if (hi == '\\') {
          if (at_end()) fail("trailing backslash");
          hi = static_cast<unsigned char>(peek());
          ++pos_;
        }
        if (hi < lo) fail("bad class range");
        for (int x = lo; x <= hi; ++x) ast.set.set(static_cast<size_t>(x));
      } else {
        ast.set.set(lo);
      }
    }
    if (at_end()) fail("expected ']'");
    ++pos_;
    if (negate) ast.set = ~ast.set;
    ast.set &= allowed_bytes();
    return ast;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// Thompson NFA: each state has a byte set with one successor, and epsilon successors.
struct Nfa {
  struct State {
    ByteSet set;
    int32_t next = -1;
    std::vector<int32_t> eps;
  };
  std::vector<State> states;
  int32_t add() {
    if (states.size() >= kMaxNfaStates) throw RegexError("pattern too large");
    states.emplace_back();
    return static_cast<int32_t>(states.size() - 1);
  }
  // Builds `ast` between fresh states; returns {start, end}.
  std::pair<int32_t, int32_t> build(const Ast& ast) {
    const int32_t start = add();
    int32_t end = start;
    switch (ast.kind) {
      case Ast::kSet: {
        end = add();
        states[static_cast<size_t>(start)].set = ast.set;
        states[static_cast<size_t>(start)].next = end;
        break;
      }
      case Ast::kConcat:
        for (const Ast& child : ast.children) {
          const auto [s, e] = build(child);
          states[static_cast<size_t>(end)].eps.push_back(s);
          end = e;
        }
        break;
      case Ast::kAlt:
        end = add();
        for (const Ast& child : ast.children) {
          const auto [s, e] = build(child);
          states[static_cast<size_t>(start)].eps.push_back(s);
          states[static_cast<size_t>(e)].eps.push_back(end);
        }
        break;
      case Ast::kRepeat: {
        const Ast& child = ast.children[0];
        for (int i = 0; i < ast.min; ++i) {
          const auto [s, e] = build(child);
          states[static_cast<size_t>(end)].eps.push_back(s);
          end = e;
        }
        if (ast.max < 0) {  // a loop
          const auto [s, e] = build(child);
          const int32_t after = add();
          states[static_cast<size_t>(end)].eps.push_back(s);
          states[static_cast<size_t>(end)].eps.push_back(after);
          states[static_cast<size_t>(e)].eps.push_back(s);
          states[static_cast<size_t>(e)].eps.push_back(after);
          end = after;
        } else {
          const int32_t after = add();
          for (int i = ast.min; i < ast.max; ++i) {
            const auto [s, e] = build(child);
            states[static_cast<size_t>(end)].eps.push_back(s);
            states[static_cast<size_t>(end)].eps.push_back(after);
            end = e;
          }
          states[static_cast<size_t>(end)].eps.push_back(after);
          end = after;
        }
        break;
      }
    }
    return {start, end};
  }
};

}  // namespace

class RegexCompiler {
 public:
  static std::shared_ptr<const ByteRegex> run(std::string_view pattern) {
    const Ast ast = Parser(pattern).parse();
    Nfa nfa;
    const auto [start, accept] = nfa.build(ast);
    const size_t n = nfa.states.size();
    using Set = std::vector<bool>;
    const auto closure = [&](Set set) {
      std::vector<int32_t> work;
      for (size_t i = 0; i < n; ++i) {
        if (set[i]) work.push_back(static_cast<int32_t>(i));
      }
      while (!work.empty()) {
        const int32_t s = work.back();
        work.pop_back();
        for (const int32_t t : nfa.states[static_cast<size_t>(s)].eps) {
          if (!set[static_cast<size_t>(t)]) {
            set[static_cast<size_t>(t)] = true;
            work.push_back(t);
          }
        }
      }
      return set;
    };
    // Subset construction.
    std::map<Set, int32_t> ids;
    std::vector<Set> sets;
    Set first(n, false);
    first[static_cast<size_t>(start)] = true;
    sets.push_back(closure(first));
    ids.emplace(sets[0], 0);
    std::vector<int32_t> table;
    for (size_t d = 0; d < sets.size(); ++d) {
      table.resize((d + 1) * 256, ByteRegex::kDead);
      for (int byte = 0; byte < 256; ++byte) {
        Set next(n, false);
        bool any = false;
        for (size_t s = 0; s < n; ++s) {
          if (sets[d][s] && nfa.states[s].next >= 0 && nfa.states[s].set.test(static_cast<size_t>(byte))) {
            next[static_cast<size_t>(nfa.states[s].next)] = true;
            any = true;
          }
        }
        if (!any) continue;
        next = closure(std::move(next));
        auto found = ids.find(next);
        if (found == ids.end()) {
          if (sets.size() >= kMaxDfaStates) throw RegexError("pattern '" + std::string(pattern) + "' is too complex");
          found = ids.emplace(next, static_cast<int32_t>(sets.size())).first;
          sets.push_back(next);
        }
        table[d * 256 + static_cast<size_t>(byte)] = found->second;
      }
    }
    // Prune states that cannot reach acceptance (so that a live state can always finish).
    const size_t m = sets.size();
    std::vector<uint8_t> accepting(m, 0), live(m, 0);
    for (size_t d = 0; d < m; ++d) live[d] = accepting[d] = sets[d][static_cast<size_t>(accept)] ? 1 : 0;
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t d = 0; d < m; ++d) {
        if (live[d]) continue;
        for (int byte = 0; byte < 256 && !live[d]; ++byte) {
          const int32_t t = table[d * 256 + static_cast<size_t>(byte)];
          if (t >= 0 && live[static_cast<size_t>(t)]) live[d] = changed = 1;
        }
      }
    }
    if (!live[0]) throw RegexError("pattern '" + std::string(pattern) + "' matches nothing a JSON string can hold");
    for (int32_t& t : table) {
      if (t >= 0 && !live[static_cast<size_t>(t)]) t = ByteRegex::kDead;
    }
    // Shortest distance to acceptance (Bellman-Ford style relaxation; the DFA is small).
    std::vector<int32_t> distance(m, 1 << 30);
    for (size_t d = 0; d < m; ++d) {
      if (accepting[d]) distance[d] = 0;
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t d = 0; d < m; ++d) {
        for (int byte = 0; byte < 256; ++byte) {
          const int32_t t = table[d * 256 + static_cast<size_t>(byte)];
          if (t >= 0 && distance[static_cast<size_t>(t)] + 1 < distance[d]) {
            distance[d] = distance[static_cast<size_t>(t)] + 1;
            changed = true;
          }
        }
      }
    }
    auto regex = std::make_shared<ByteRegex>();
    regex->min_remaining_ = std::move(distance);
    regex->table_ = std::move(table);
    regex->accepting_ = std::move(accepting);
    return regex;
  }
};

std::shared_ptr<const ByteRegex> ByteRegex::compile(std::string_view pattern) {
  return RegexCompiler::run(pattern);
}

}  // namespace gossamer::text::grammar
