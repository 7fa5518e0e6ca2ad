#include "text/grammar/grammar_matcher.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "text/grammar/json_number.h"

namespace gossamer::text::grammar {

namespace {

constexpr size_t kMaxStacks = 32;

enum FrameKind : uint8_t { kRoot, kObject, kArray, kString, kNumber, kLiteral };
// kRoot
enum : uint8_t { kRootStart, kRootDone };
// kObject: the gap states (whitespace allowed in each)
enum : uint8_t { kObjStart, kObjAfterKey, kObjAfterColon, kObjAfterValue, kObjAfterComma };
// kArray
enum : uint8_t { kArrStart, kArrAfterValue, kArrAfterComma };
// kString
enum : uint8_t { kStrNormal, kStrEscape, kStrHex };

bool is_ws(uint8_t b) {
  return b == ' ' || b == '\n' || b == '\t' || b == '\r';
}
bool is_digit(uint8_t b) {
  return b >= '0' && b <= '9';
}
bool is_hex(uint8_t b) {
  return is_digit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
}

bool same_stack(const Stack& a, const Stack& b) {
  return a.depth == b.depth && a.size == b.size &&
         std::memcmp(a.frames, b.frames, static_cast<size_t>(a.size) * sizeof(Frame)) == 0;
}

void push_unique(std::vector<Stack>& out, Stack&& stack) {
  for (const Stack& s : out) {
    if (same_stack(s, stack)) return;
  }
  if (out.size() < kMaxStacks) out.push_back(std::move(stack));
}

uint64_t all_properties(const Node& node) {
  return node.properties.size() >= 64 ? ~uint64_t{0} : (uint64_t{1} << node.properties.size()) - 1;
}

// Keys that may come next: the properties not given yet, in any order (`seen` is the object's f.bits).
uint64_t allowed_keys(const Node& node, uint64_t seen) {
  return all_properties(node) & ~seen;
}
bool required_done(const Node& node, uint64_t seen) {
  return (node.required_mask & ~seen) == 0;
}
bool extra_allowed(const Node& node, const Frame& f) {
  return node.additional >= 0 && f.extra < node.max_additional;
}

}  // namespace

void Stack::copy_frames(const Stack& other) {
  std::memcpy(frames, other.frames, static_cast<size_t>(size) * sizeof(Frame));
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  GOSSAMER_CHECK(grammar_ && !grammar_->nodes.empty(), "GrammarMatcher: empty grammar");
  GOSSAMER_CHECK(grammar_->limits.max_depth >= 1 && grammar_->limits.max_depth <= 18,
                 "GrammarLimits::max_depth must be in [1, 18]");
  Stack stack;
  Frame root{};
  root.kind = kRoot;
  root.state = kRootStart;
  stack.push(root);
  stacks_.push_back(std::move(stack));
}

void GrammarMatcher::start_value(Stack& stack, int32_t node_index, uint8_t byte, std::vector<Stack>& out) const {
  const Grammar& g = *grammar_;
  const Node& node = g.nodes[static_cast<size_t>(node_index)];
  Frame f{};
  f.node = node_index;
  switch (node.kind) {
    case NodeKind::kAnyOf:
      for (const int32_t alternative : node.alternatives) {
        Stack copy = stack;
        start_value(copy, alternative, byte, out);
      }
      return;
    case NodeKind::kAny: {
      const int32_t target = byte == '{'                       ? g.any_object
                             : byte == '['                     ? g.any_array
                             : byte == '"'                     ? g.any_string
                             : (byte == '-' || is_digit(byte)) ? g.any_number
                                                               : g.any_literal;
      start_value(stack, target, byte, out);
      return;
    }
    case NodeKind::kObject:
    case NodeKind::kArray:
      if (byte != (node.kind == NodeKind::kObject ? '{' : '[') || stack.depth >= g.limits.max_depth) return;
      f.kind = node.kind == NodeKind::kObject ? kObject : kArray;
      f.state = static_cast<uint8_t>(node.kind == NodeKind::kObject ? uint8_t{kObjStart} : uint8_t{kArrStart});
      ++stack.depth;
      stack.push(f);
      push_unique(out, std::move(stack));
      return;
    case NodeKind::kString:
      if (byte != '"') return;
      f.kind = kString;
      f.state = kStrNormal;
      if (node.regex) f.extra = node.regex->start();
      stack.push(f);
      push_unique(out, std::move(stack));
      return;
    case NodeKind::kNumber:
    case NodeKind::kInteger:
      f.kind = kNumber;
      f.state = kNumStart;
      stack.push(f);
      step_stack(stack, byte, out);
      return;
    case NodeKind::kLiterals:
    case NodeKind::kBoolean:
    case NodeKind::kNull:
      f.kind = kLiteral;
      for (size_t i = 0; i < node.literals.size(); ++i) f.bits |= uint64_t{1} << i;
      stack.push(f);
      step_stack(stack, byte, out);
      return;
  }
}

void GrammarMatcher::step_stack(Stack& stack, uint8_t byte, std::vector<Stack>& out) const {
  const Grammar& g = *grammar_;
  Frame& f = stack.back();
  const Node& node = g.nodes[static_cast<size_t>(f.kind == kRoot ? 0 : f.node)];
  const auto accept = [&] { push_unique(out, std::move(stack)); };
  // A completed value: pop; a lookahead byte (numbers, literals) is then fed to the parent.
  const auto pop = [&](bool refeed) {
    if (f.kind == kObject || f.kind == kArray) --stack.depth;
    stack.pop();
    if (refeed) {
      step_stack(stack, byte, out);
    } else {
      accept();
    }
  };
  const auto gap_ws = [&]() {
    if (!is_ws(byte) || f.ws >= g.limits.max_whitespace) return false;
    ++f.ws;
    accept();
    return true;
  };

  switch (f.kind) {
    case kRoot:
      if (f.state != kRootStart) return;
      f.state = kRootDone;
      start_value(stack, 0, byte, out);
      return;

    case kObject: {
      if (gap_ws()) return;
      f.ws = 0;
      const auto open_key = [&] {
        Frame key{};
        key.kind = kString;
        key.state = kStrNormal;
        key.key = 1;
        key.node = f.node;
        key.extra = 1;  // byte position in the candidates' quoted text
        key.bits = allowed_keys(node, f.bits);
        key.bits2 = all_properties(node);
        if (key.bits == 0 && !extra_allowed(node, f)) return;
        stack.push(key);
        accept();
      };
      switch (f.state) {
        case kObjStart:
        case kObjAfterValue:
          if (byte == '}') {
            if (required_done(node, f.bits)) pop(false);
            return;
          }
          if (f.state == kObjStart && byte == '"') return open_key();
          if (f.state == kObjAfterValue && byte == ',') {
            if (allowed_keys(node, f.bits) == 0 && !extra_allowed(node, f)) return;
            f.state = kObjAfterComma;
            accept();
          }
          return;
        case kObjAfterComma:
          if (byte == '"') open_key();
          return;
        case kObjAfterKey:
          if (byte != ':') return;
          f.state = kObjAfterColon;
          accept();
          return;
        case kObjAfterColon: {
          f.state = kObjAfterValue;
          start_value(stack, f.aux, byte, out);
          return;
        }
      }
      return;
    }

    case kArray: {
      if (gap_ws()) return;
      f.ws = 0;
      if (byte == ']') {
        if (f.state != kArrAfterComma && f.count >= node.min_items) pop(false);
        return;
      }
      if (f.state == kArrAfterValue) {
        if (byte != ',' || f.count >= node.max_items) return;
        f.state = kArrAfterComma;
        accept();
        return;
      }
      if (f.count >= node.max_items) return;
      ++f.count;
      f.state = kArrAfterValue;
      start_value(stack, node.items, byte, out);
      return;
    }

    case kString: {
      const bool key = f.key != 0;
      const int32_t max_length = key ? g.limits.max_string_length : node.max_length;
      const int32_t min_length = key ? 0 : node.min_length;
      const ByteRegex* regex = key ? nullptr : node.regex.get();
      const Node* object = key ? &node : nullptr;
      if (key) {  // candidate keys still equal to the bytes so far (the closing quote included)
        uint64_t allowed = 0, all = 0;
        for (size_t j = 0; j < object->properties.size(); ++j) {
          const std::string& text = object->properties[j].key;
          if (static_cast<size_t>(f.extra) < text.size() &&
              static_cast<uint8_t>(text[static_cast<size_t>(f.extra)]) == byte) {
            all |= f.bits2 & (uint64_t{1} << j);
            allowed |= f.bits & (uint64_t{1} << j);
          }
        }
        f.bits = allowed;
        f.bits2 = all;
        ++f.extra;
      }
      const Frame* parent = key ? &stack.frames[stack.size - 2] : nullptr;
      const bool open_keys = key && extra_allowed(*object, *parent);
      if (key && !open_keys && f.bits == 0) return;  // only the schema's keys
      if (f.utf8 > 0) {
        if (byte < f.lo || byte > f.hi) return;
        --f.utf8;
        f.lo = 0x80, f.hi = 0xBF;
        return accept();
      }
      if (f.state == kStrEscape) {
        if (byte == 'u') {
          f.state = kStrHex;
          f.hex = 0;
          return accept();
        }
        if (std::strchr("\"\\/bfnrt", byte) == nullptr || byte == 0) return;
        f.state = kStrNormal;
        return accept();
      }
      if (f.state == kStrHex) {
        if (!is_hex(byte)) return;
        // NOTE: no surrogates (\uD800-\uDFFF): a lone one is invalid, and pairs are not worth the state.
        if (f.hex == 0 && (byte == 'd' || byte == 'D'))
          f.hex = 0x10;
        else if (f.hex == 0x11 && std::strchr("89abcdefABCDEF", byte) != nullptr)
          return;
        f.hex = static_cast<uint8_t>((f.hex & 0x10) | ((f.hex & 0x0f) + 1));
        if ((f.hex & 0x0f) == 4) f.state = kStrNormal;
        return accept();
      }
      if (byte == '"') {
        if (f.count < min_length || (regex != nullptr && !regex->accepts(f.extra))) return;
        if (key) {
          // An exact match is one of the schema's keys (allowed here, or a duplicate: refused);
          // anything else is an extra property.
          Frame& obj = stack.frames[stack.size - 2];
          if (f.bits2 != 0) {
            if (f.bits == 0) return;
            const int32_t j = __builtin_ctzll(f.bits);
            obj.bits |= uint64_t{1} << j;
            obj.aux = object->properties[static_cast<size_t>(j)].node;
          } else {
            if (!open_keys) return;
            ++obj.extra;
            obj.aux = object->additional;
          }
          obj.state = kObjAfterKey;
          obj.ws = 0;
        }
        return pop(false);
      }
      if (byte < 0x20) return;
      if (regex != nullptr) {
        const int32_t next = regex->step(f.extra, byte);
        // NOTE: the pattern must still be able to finish within the length bound.
        if (next == ByteRegex::kDead || f.count + 1 + regex->min_remaining(next) > max_length) return;
        f.extra = next;
        ++f.count;
        return accept();
      }
      if (byte == '\\') {
        if (f.count >= max_length) return;
        ++f.count;
        f.state = kStrEscape;
        return accept();
      }
      if (byte < 0x80) {
        if (f.count >= max_length) return;
        ++f.count;
        return accept();
      }
      // A UTF-8 lead byte, with the exact range of its first continuation byte.
      uint8_t need = 0, lo = 0x80, hi = 0xBF;
      if (byte >= 0xC2 && byte <= 0xDF)
        need = 1;
      else if (byte == 0xE0)
        need = 2, lo = 0xA0;
      else if (byte == 0xED)
        need = 2, hi = 0x9F;
      else if (byte >= 0xE1 && byte <= 0xEF)
        need = 2;
      else if (byte == 0xF0)
        need = 3, lo = 0x90;
      else if (byte >= 0xF1 && byte <= 0xF3)
        need = 3;
      else if (byte == 0xF4)
        need = 3, hi = 0x8F;
      if (need == 0 || f.count >= max_length) return;
      ++f.count;
      f.utf8 = need, f.lo = lo, f.hi = hi;
      return accept();
    }

    case kNumber: {
      const NumberStep result = step_number(node, f, byte, g.limits);
      if (result == NumberStep::kTaken) return accept();
      if (result == NumberStep::kEnded) return pop(true);
      return;
    }

    case kLiteral: {
      uint64_t next = 0;
      bool complete = false;
      for (size_t i = 0; i < node.literals.size(); ++i) {
        if (!(f.bits & (uint64_t{1} << i))) continue;
        const std::string& text = node.literals[i];
        if (static_cast<size_t>(f.extra) < text.size()) {
          if (static_cast<uint8_t>(text[static_cast<size_t>(f.extra)]) == byte) next |= uint64_t{1} << i;
        } else {
          complete = true;
        }
      }
      if (next != 0) {
        f.bits = next;
        ++f.extra;
        return accept();
      }
      if (complete) pop(true);
      return;
    }
  }
}

void GrammarMatcher::step(const std::vector<Stack>& in, uint8_t byte, std::vector<Stack>& out) const {
  out.clear();
  for (const Stack& stack : in) {
    Stack copy = stack;
    step_stack(copy, byte, out);
  }
}

bool GrammarMatcher::advance(uint8_t byte) {
  step(stacks_, byte, scratch_);
  if (scratch_.empty()) return false;
  stacks_.swap(scratch_);
  return true;
}

bool GrammarMatcher::advance(std::string_view bytes) {
  std::vector<Stack> saved = stacks_;
  for (const char c : bytes) {
    if (!advance(static_cast<uint8_t>(c))) {
      stacks_ = std::move(saved);
      return false;
    }
  }
  return true;
}

bool GrammarMatcher::stack_can_end(const Stack& stack) const {
  // Complete when only the finished root is left, or when the open top is a number or literal that is
  // complete and everything below it is.
  const Frame& top = stack.back();
  if (top.kind == kRoot) return top.state == kRootDone;
  const Node& node = grammar_->nodes[static_cast<size_t>(top.node)];
  bool complete = false;
  if (top.kind == kNumber) complete = number_complete(node, top);
  if (top.kind == kLiteral) {
    for (size_t i = 0; i < node.literals.size(); ++i) {
      if ((top.bits & (uint64_t{1} << i)) && static_cast<size_t>(top.extra) == node.literals[i].size()) complete = true;
    }
  }
  return complete && stack.size == 2 && stack.frames[0].state == kRootDone;
}

bool GrammarMatcher::can_end() const {
  return std::any_of(stacks_.begin(), stacks_.end(), [&](const Stack& s) { return stack_can_end(s); });
}

bool GrammarMatcher::must_end() const {
  return std::all_of(stacks_.begin(), stacks_.end(),
                     [&](const Stack& s) { return s.size == 1 && s.frames[0].state == kRootDone; });
}

GrammarMatcher::StringContext GrammarMatcher::string_context() const {
  StringContext context;
  for (const Stack& stack : stacks_) {
    const Frame& f = stack.back();
    if (f.kind != kString || f.state != kStrNormal || f.utf8 != 0) return {};
    const Node& node = grammar_->nodes[static_cast<size_t>(f.node)];
    int32_t max_length = node.max_length;
    if (f.key != 0) {
      // Any content fits an open object's key; a closed object's key must follow its candidates.
      if (!extra_allowed(node, stack.frames[stack.size - 2])) return {};
      max_length = grammar_->limits.max_string_length;
    } else if (node.regex) {
      if (stacks_.size() != 1) return {};
      context.regex = node.regex.get();
      context.regex_state = f.extra;
    }
    context.room = std::max(context.room, max_length - f.count);
  }
  return context;
}

}  // namespace gossamer::text::grammar
