"""Column arithmetic for tools/tiny_corpus.py (docs/tiny-model.md): the numbers and the analysis text.

o200k splits a digit run into pieces of 1-3 digits ("17" and "345" are one token each, "1234" is
"123" + "4") and never joins a digit to the space before it. So every number here stays below 1000 (sums
too): each operand, each partial result and each answer is exactly one token. The analysis then works one
column at a time, ones first, and every step needs only a lookup on a token a few positions back:

  Ones: 17 has 7, 25 has 5; 7 + 5 = 12, write 2, carry 1, so far 2.
  Tens: 17 has 1, 25 has 2; 1 + 2 + 1 = 4, write 4, so far 42.

"17 has 7" (the operand copied, then its digit in the named column), a one-digit sum, "write 2, carry 1"
(the two digits of a number below 20), and "so far 42" (the new digit put in front of the previous partial
result, leading zeros kept: "so far 04"), so that the answer is a copy of the last partial result. Low
effort drops the copied operands, high effort adds a check. Subtraction borrows the same way ("5 is less
than 8, so borrow: 15 - 8 = 7"; the next column starts with "after the borrow 4 - 1 = 3").

Operand sizes are drawn by digit count, not by value (uniform values would be 90% three-digit numbers), so
the one- and two-digit cases, "17 + 25" among them, are well represented next to the three-digit ones.
"""

PLACES = ["Ones", "Tens", "Hundreds"]
LIMIT = 999  # every number of an addition or subtraction, the result included, is one o200k token
# Digit counts of a random operand: 1, 2 or 3 digits.
ADD_DIGITS = [0.2, 0.45, 0.35]
SUB_DIGITS = [0.15, 0.45, 0.4]


def digit(n, i):
    return (n // 10 ** i) % 10


def width(n):
    return len(str(n))


def number_with_digits(rng, count):
    return rng.randint(0, 9) if count == 1 else rng.randint(10 ** (count - 1), 10 ** count - 1)


def digit_count(rng, weights):
    return rng.choices([1, 2, 3], weights=weights)[0]


def add_operands(rng):
    """a + b <= LIMIT, the digit counts of a and b drawn independently."""
    while True:
        a = number_with_digits(rng, digit_count(rng, ADD_DIGITS))
        lb = digit_count(rng, ADD_DIGITS)
        lo, hi = (0, 9) if lb == 1 else (10 ** (lb - 1), 10 ** lb - 1)
        hi = min(hi, LIMIT - a)
        if lo <= hi:
            return a, rng.randint(lo, hi)


def sub_operands(rng):
    """b <= a <= LIMIT, b with at most as many digits as a."""
    la = digit_count(rng, SUB_DIGITS)
    a = number_with_digits(rng, la)
    lb = rng.randint(1, la)
    lo, hi = (0, 9) if lb == 1 else (10 ** (lb - 1), 10 ** lb - 1)
    return a, rng.randint(lo, min(hi, a))


def add_reasoning(a, b, effort):
    assert 0 <= a and 0 <= b and a + b <= LIMIT, (a, b)
    steps, carry, so_far = [], 0, ""
    for i in range(max(width(a), width(b))):
        da, db = digit(a, i), digit(b, i)
        s = da + db + carry
        term = f"{da} + {db}" + (f" + {carry}" if carry else "")
        so_far = f"{s % 10}{so_far}"
        copy = "" if effort == "low" else f" {a} has {da}, {b} has {db};"
        steps.append(f"{PLACES[i]}:{copy} {term} = {s}, write {s % 10}" + (f", carry {s // 10}" if s >= 10 else "")
                     + f", so far {so_far}.")
        carry = s // 10
    if carry:
        i = len(steps)
        so_far = f"{carry}{so_far}"
        steps.append(f"{PLACES[i]}: only the carry {carry}, write {carry}, so far {so_far}.")
    c = a + b
    assert int(so_far) == c and so_far == str(c), (a, b, so_far)
    if effort == "low":
        return " ".join(steps) + f" {a} + {b} = {c}."
    text = f"We need {a} + {b}. " + " ".join(steps) + f" So {a} + {b} = {c}."
    if effort == "high":
        text += f" Check: {c} - {b} = {a}, which matches. The answer is {c}."
    return text


def sub_reasoning(a, b, effort):
    assert 0 <= b <= a <= LIMIT, (a, b)
    steps, borrow, so_far = [], 0, ""
    for i in range(width(a)):
        da, db = digit(a, i), digit(b, i)
        parts = [] if effort == "low" else [f" {a} has {da}, {b} has {db};"]
        top = da - borrow
        if borrow:
            parts.append(f" after the borrow {da} - 1 = {top};")
        if top < db:
            d = top + 10 - db
            parts.append(f" {top} is less than {db}, so borrow: {top + 10} - {db} = {d}")
            borrow = 1
        else:
            d = top - db
            parts.append(f" {top} - {db} = {d}")
            borrow = 0
        so_far = f"{d}{so_far}"
        write = "" if effort == "low" else f", write {d}"
        steps.append(f"{PLACES[i]}:" + "".join(parts) + f"{write}, so far {so_far}.")
    c = a - b
    assert borrow == 0 and int(so_far) == c, (a, b, so_far)
    if so_far != str(c):
        steps[-1] = steps[-1][:-1] + f", which is {c}."
    if effort == "low":
        return " ".join(steps) + f" {a} - {b} = {c}."
    text = f"We need {a} - {b}. " + " ".join(steps) + f" So {a} - {b} = {c}."
    if effort == "high":
        text += f" Check: {c} + {b} = {a}, which matches. The answer is {c}."
    return text


def mul_reasoning(a, b, effort):
    c = a * b
    if effort == "low":
        return f"{a} × {b} = {c}."
    text = f"We need {a} times {b}. {a} × {b} = {c}."
    if effort == "high":
        text += f" Check: {c} ÷ {b} = {a}, which matches. The answer is {c}."
    return text


def arithmetic(rng, effort, phrase, kind):
    """(user text, analysis, final answer, (a, b, result)) of one add, sub or mul question."""
    if kind == "add":
        a, b = add_operands(rng)
        return phrase.format(a=a, b=b), add_reasoning(a, b, effort), f"{a} + {b} = {a + b}.", (a, b, a + b)
    if kind == "sub":
        a, b = sub_operands(rng)
        return phrase.format(a=a, b=b), sub_reasoning(a, b, effort), f"{a} - {b} = {a - b}.", (a, b, a - b)
    a, b = rng.randint(2, 12), rng.randint(2, 12)
    return phrase.format(a=a, b=b), mul_reasoning(a, b, effort), f"{a} × {b} = {a * b}.", (a, b, a * b)
