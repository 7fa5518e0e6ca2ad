#include "text/grammar/json_number.h"

#include <cmath>

namespace gossamer::text::grammar {

namespace {

bool is_digit(uint8_t b) {
  return b >= '0' && b <= '9';
}

// Value intervals a number may still reach, checked against the node's bounds.
bool interval_meets(const Node& node, double lo, bool lo_open, double hi, bool hi_open) {
  if (node.minimum) {
    const double m = *node.minimum;
    if (hi < m || (hi == m && (hi_open || node.exclusive_minimum))) return false;
  }
  if (node.maximum) {
    const double m = *node.maximum;
    if (lo > m || (lo == m && (lo_open || node.exclusive_maximum))) return false;
  }
  return true;
}

bool in_bounds(const Node& node, double v) {
  return interval_meets(node, v, false, v, false);
}

// Whether some completion of the number in `f` satisfies the bounds (magnitudes signed by the sign).
bool number_feasible(const Node& node, const Frame& f, const GrammarLimits& limits) {
  if (!node.minimum && !node.maximum) return true;
  const bool negative = (f.hex & kNumNegative) != 0;
  const bool integer = node.kind == NodeKind::kInteger;
  const auto meets_magnitude = [&](double lo, bool lo_open, double hi, bool hi_open) {
    return negative ? interval_meets(node, -hi, hi_open, -lo, lo_open) : interval_meets(node, lo, lo_open, hi, hi_open);
  };
  const double v = f.value;
  switch (f.state) {
    case kNumSign:  // any magnitude below 10^digits
      return meets_magnitude(0.0, false, std::pow(10.0, limits.max_integer_digits), true);
    case kNumZero: return integer ? meets_magnitude(0.0, false, 0.0, false) : meets_magnitude(0.0, false, 1.0, true);
    case kNumInt: {
      if (integer ? meets_magnitude(v, false, v, false) : meets_magnitude(v, false, v + 1.0, true)) return true;
      double scale = 1.0;
      for (int32_t digits = f.count + 1; digits <= limits.max_integer_digits; ++digits) {
        scale *= 10.0;
        if (meets_magnitude(v * scale, false, (v + 1.0) * scale, true)) return true;
      }
      return false;
    }
    case kNumDot:
    case kNumFrac: {
      const double room = f.aux < limits.max_fraction_digits ? f.scale * 10.0 : 0.0;  // the rest may add < room
      return room > 0.0 ? meets_magnitude(v, false, v + room, true) : meets_magnitude(v, false, v, false);
    }
    default: return true;
  }
}

}  // namespace

bool number_complete(const Node& node, const Frame& f) {
  const bool final_state = f.state == kNumZero || f.state == kNumInt || f.state == kNumFrac || f.state == kNumExp;
  if (!final_state) return false;
  if (!node.minimum && !node.maximum) return true;
  return in_bounds(node, (f.hex & kNumNegative) ? -f.value : f.value);
}

NumberStep step_number(const Node& node, Frame& f, uint8_t byte, const GrammarLimits& limits) {
  const bool integer = node.kind == NodeKind::kInteger;
  const bool bounded = node.minimum || node.maximum;
  Frame before = f;
  bool taken = true;
  switch (f.state) {
    case kNumStart:
      if (byte == '-') {
        f.hex |= kNumNegative;
        f.state = kNumSign;
      } else if (byte == '0') {
        f.state = kNumZero;
      } else if (is_digit(byte)) {
        f.state = kNumInt, f.count = 1, f.value = byte - '0';
      } else {
        return NumberStep::kRefused;
      }
      break;
    case kNumSign:
      if (byte == '0')
        f.state = kNumZero;
      else if (is_digit(byte))
        f.state = kNumInt, f.count = 1, f.value = byte - '0';
      else
        return NumberStep::kRefused;
      break;
    case kNumZero:
    case kNumInt:
      if (f.state == kNumInt && is_digit(byte) && f.count < limits.max_integer_digits) {
        ++f.count;
        f.value = f.value * 10.0 + (byte - '0');
      } else if (byte == '.' && !integer) {
        f.state = kNumDot, f.scale = 0.1, f.aux = 0;
      } else if ((byte == 'e' || byte == 'E') && !integer && !bounded) {
        f.state = kNumE;
      } else {
        taken = false;
      }
      break;
    case kNumDot:
    case kNumFrac:
      if (is_digit(byte) && f.aux < limits.max_fraction_digits) {
        f.value += (byte - '0') * f.scale;
        f.scale *= 0.1;
        ++f.aux;
        f.state = kNumFrac;
      } else if (f.state == kNumFrac && (byte == 'e' || byte == 'E') && !bounded) {
        f.state = kNumE;
      } else {
        taken = false;
      }
      break;
    case kNumE:
      if (byte == '+' || byte == '-')
        f.state = kNumESign;
      else if (is_digit(byte))
        f.state = kNumExp, f.count = 1;
      else
        return NumberStep::kRefused;
      break;
    case kNumESign:
    case kNumExp:
      if (is_digit(byte) && (f.state == kNumESign || f.count < 2)) {
        f.count = f.state == kNumESign ? 1 : f.count + 1;
        f.state = kNumExp;
      } else {
        taken = false;
      }
      break;
  }
  if (taken) {
    if (!number_feasible(node, f, limits)) {
      f = before;
      return NumberStep::kRefused;
    }
    return NumberStep::kTaken;
  }
  f = before;
  return number_complete(node, f) ? NumberStep::kEnded : NumberStep::kRefused;
}

}  // namespace gossamer::text::grammar
