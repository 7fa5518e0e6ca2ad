#include "text/harmony_header_repair.h"

#include <string>
#include <vector>

namespace gossamer::text::harmony {

namespace {

constexpr std::string_view kChannels[] = {"analysis", "commentary", "final"};

bool has_markup(const std::optional<std::string>& value) {
  return value && value->find("<|") != std::string::npos;
}

// Cuts `text` at the first markup (`<|`), trims trailing punctuation left by broken spacing.
std::string before_markup(std::string_view text) {
  const size_t cut = text.find("<|");
  std::string out(text.substr(0, cut));
  while (!out.empty() && (out.back() == ',' || out.back() == ':')) out.pop_back();
  return out;
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  for (const char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

// Takes every `<|channel|>VALUE` out of `text` (VALUE ends at whitespace or markup); returns the first value.
// NOTE: rebuilt by appending (in-place replace trips a GCC 12 -Wrestrict false positive).
std::optional<std::string> take_channels(std::string& text) {
  std::optional<std::string> first;
  std::string rest;
  size_t pos = 0;
  for (size_t marker = text.find(kChannelMarker); marker != std::string::npos;
       marker = text.find(kChannelMarker, pos)) {
    rest.append(text, pos, marker - pos);
    rest += ' ';
    const size_t begin = marker + kChannelMarker.size();
    size_t end = begin;
    while (end < text.size() && text[end] != '<' && text[end] != ' ' && text[end] != '\t' && text[end] != '\n') ++end;
    if (!first && end > begin) first = text.substr(begin, end - begin);
    pos = end;
  }
  rest.append(text, pos, std::string::npos);
  text = std::move(rest);
  return first;
}

std::optional<std::string_view> channel_word(std::string_view word) {
  for (const std::string_view channel : kChannels) {
    if (word == channel) return channel;
  }
  return std::nullopt;
}

}  // namespace

bool header_needs_repair(const ParsedHeader& header) {
  std::optional<std::string> type = header.content_type;
  if (type && type->starts_with(kConstrainMarker)) type = type->substr(kConstrainMarker.size());
  if (has_markup(header.recipient) || has_markup(header.channel) || has_markup(type) ||
      has_markup(header.author.name)) {
    return true;
  }
  if (header.recipient && channel_word(*header.recipient)) return true;  // `assistant final`
  if (header.author.role == Role::kTool && header.author.name) {         // `assistantcommentary`
    const std::string_view assistant = role_name(Role::kAssistant);
    const std::string& name = *header.author.name;
    if (name.starts_with(assistant) && channel_word(std::string_view(name).substr(assistant.size()))) return true;
  }
  return false;
}

ParsedHeader repair_harmony_header(std::string_view header_text, std::optional<Role> role_hint) {
  ParsedHeader parsed;
  // Space out the constrain marker so that it starts its own word.
  std::string text;
  for (size_t pos = 0; pos < header_text.size();) {
    if (header_text.substr(pos).starts_with(kConstrainMarker)) {
      text += ' ';
      text += kConstrainMarker;
      pos += kConstrainMarker.size();
    } else {
      text += header_text[pos++];
    }
  }
  parsed.channel = take_channels(text);
  std::vector<std::string> words = split_words(text);
  size_t next = 0;
  if (role_hint) {
    parsed.author.role = *role_hint;
  } else if (!words.empty()) {
    if (const auto role = parse_role(words[0])) {
      parsed.author.role = *role;
      next = 1;
    } else if (words[0].find('.') != std::string::npos && !words[0].starts_with("to=")) {
      parsed.author.role = Role::kTool;
      parsed.author.name = before_markup(words[0]);
      next = 1;
    } else {
      parsed.author.role = Role::kAssistant;  // the only role a model writes
    }
  } else {
    parsed.author.role = Role::kAssistant;
  }
  const std::string_view role = role_name(parsed.author.role);
  for (size_t i = next; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == role) continue;
    if (word.starts_with("to=")) {
      const std::string recipient = before_markup(std::string_view(word).substr(3));
      if (!recipient.empty() && !parsed.recipient) parsed.recipient = recipient;
    } else if (word.starts_with(kConstrainMarker)) {
      const std::string type = before_markup(std::string_view(word).substr(kConstrainMarker.size()));
      if (!parsed.content_type && !type.empty()) parsed.content_type = std::string(kConstrainMarker) + type;
    } else if (const auto channel = channel_word(word)) {
      if (!parsed.channel) parsed.channel = std::string(*channel);
    } else if (word.starts_with(role) && channel_word(std::string_view(word).substr(role.size()))) {
      if (!parsed.channel) parsed.channel = word.substr(role.size());  // `assistantcommentary`
    } else if (word.starts_with("functions.") && !parsed.recipient) {
      parsed.recipient = before_markup(word);
    } else if ((word == "json" || word == "code") && !parsed.content_type) {
      parsed.content_type = word;
    }
    // Anything else is dropped: a stray word must not fail the message or leak into a field.
  }
  if (parsed.channel) *parsed.channel = before_markup(*parsed.channel);
  if (parsed.channel && parsed.channel->empty()) parsed.channel.reset();
  return parsed;
}

}  // namespace gossamer::text::harmony
