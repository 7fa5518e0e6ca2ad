#!/usr/bin/env python3
"""Deterministic synthetic Harmony corpus for the embedded tiny model (docs/tiny-model.md).

Writes JSON lines, one conversation each:
  {"split": "train"|"eval", "domain": D, "template": T, "request": {...}, "completion": [...]}
`request` is an OpenAI Chat Completions body (messages, tools, reasoning_effort): `tools/tiny_render`
turns it into prompt ids with the server's own request parser and Harmony renderer, so the model is
trained on exactly what `gossamer serve` feeds it. `completion` is the assistant's Harmony messages
(analysis, then a final answer or a tool call), in docs/harmony-json.md's JSON form.

A template is (domain, phrasing, prefix, suffix); a fixed 10% of the templates (chosen by a hash of the
template, never one without prefix and suffix) appear only in the eval split. Domains are drawn with the
fixed shares of DOMAIN_WEIGHTS (tiny_corpus_data.py), then a phrasing uniformly; the arithmetic (numbers
and column-by-column analyses) is tiny_corpus_arith.py's. Standard library only.

Usage: python3 tools/tiny_corpus.py --seed 1 --train 80000 --eval 400 --out corpus.jsonl
"""
import argparse
import hashlib
import json
import random
import re

from tiny_corpus_data import (
    EFFORTS, PREFIXES, SUFFIXES, INSTRUCTIONS, DAYS, MONTHS, WORDS, CITIES, CONDITIONS, FACTS, UNITS,
    WEATHER_TOOL, ADD_TOOL, LOOKUP_TOOL, DESCRIPTIONS, ADD_PHRASES, SUB_PHRASES, MUL_PHRASES,
    COUNT_PHRASES, REVERSE_PHRASES, DAY_PHRASES, NEXT_DAY_PHRASES, MONTH_PHRASES, DATE_PHRASES, UNIT_PHRASES,
    WEATHER_PHRASES, CAPITAL_PHRASES, FOLLOW_PHRASES, GREETINGS, DOMAIN_WEIGHTS)
from tiny_corpus_arith import LIMIT, add_reasoning, arithmetic


def tool_spec(rng, base):
    function = dict(base)
    function["description"] = rng.choice(DESCRIPTIONS[base["name"]])
    return {"type": "function", "function": {"name": function["name"], "description": function["description"],
                                             "parameters": function["parameters"]}}


def templated(domain, phrasings):
    return [(domain, p) for p in phrasings]


def greeting(rng, effort):
    user, answer = rng.choice(GREETINGS)
    if answer.startswith("I am a tiny"):
        why = "The user asks what I am. I should describe myself and what I can do."
    elif answer == "You're welcome!":
        why = "The user thanks me. I should reply politely."
    elif answer.startswith("Goodbye"):
        why = "The user says goodbye. I should say goodbye too."
    elif answer.startswith("I'm doing well"):
        why = "The user asks how I am. I should answer kindly and offer help."
    elif answer.startswith("I "):
        why = "The user asks for something I cannot do well. I should say so and say what I can do."
    else:
        why = "The user greets me. I should greet them back and offer help."
    if effort == "low":
        why = why.split(". ")[0] + "."
    elif effort == "high":
        why += " A short, friendly reply is best."
    return "greeting", user, user, why, answer


def count_words(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8)))


def day_after(rng, effort, phrase):
    d, n = rng.randrange(7), rng.randint(1, 10)
    target = DAYS[(d + n) % 7]
    if effort == "low":
        why = f"{DAYS[d]} + {n} days = {target}."
    else:
        why = f"Start at {DAYS[d]} and count {n} days forward: " + ", ".join(
            f"{i} {DAYS[(d + i) % 7]}" for i in range(1, n + 1)) + f". So it will be {target}."
        if effort == "high":
            why += f" Check: {n} days is {n // 7} weeks and {n % 7} days, and {DAYS[d]} + {n % 7} days is {target}."
    return phrase.format(d=DAYS[d], n=n), why, f"It will be {target}."


def next_day(rng, effort, phrase):
    d = rng.randrange(7)
    target = DAYS[(d + 1) % 7]
    why = f"The day after {DAYS[d]} is {target}." if effort == "low" else (
        f"The week goes {', '.join(DAYS)}. The day after {DAYS[d]} is {target}.")
    return phrase.format(d=DAYS[d]), why, f"{target} comes after {DAYS[d]}."


def month_days(rng, effort, phrase):
    m, days = rng.choice(MONTHS)
    why = f"{m} has {days} days."
    if m == "February":
        why += " In a leap year it has 29."
        answer = "February has 28 days, or 29 in a leap year."
    else:
        answer = f"{m} has {days} days."
    if effort == "high":
        why = f"I recall the lengths of the months. {why}"
    return phrase.format(m=m), why, answer


def date_after(rng, effort, phrase):
    mi = rng.randrange(12)
    m, dim = MONTHS[mi]
    day, n = rng.randint(1, dim), rng.randint(1, 15)
    if day + n <= dim:
        result = f"{m} {day + n}"
        why = f"{m} {day} + {n} days = {m} {day + n}, still within {m}, which has {dim} days."
    else:
        nm = MONTHS[(mi + 1) % 12][0]
        left = dim - day
        result = f"{nm} {day + n - dim}"
        why = (f"{m} has {dim} days. From {m} {day}, {left} days reach {m} {dim}, and the other {n - left} days "
               f"go into {nm}: {result}.")
    if effort == "low":
        why = f"{m} {day} + {n} days = {result}."
    elif effort == "high":
        why += " Ignoring leap years."
    return phrase.format(m=m, day=day, n=n), why, f"It is {result}."


def unit(rng, effort, phrase):
    u, v, factor = rng.choice(UNITS)
    n = rng.randint(1, 20)
    why = f"1 {'foot' if u == 'feet' else u[:-1]} is {factor} {v}, so {n} {u} = {n} × {factor} = {n * factor} {v}."
    if effort == "low":
        why = f"{n} × {factor} = {n * factor}."
    elif effort == "high":
        why += f" Check: {n * factor} ÷ {factor} = {n}."
    return phrase.format(n=n, u=u, v=v), why, f"{n} {u} is {n * factor} {v}."


def make_tools(rng, required):
    names = [n for n in ("get_weather", "add", "lookup") if rng.random() < 0.4 or n == required]
    rng.shuffle(names)  # a list, not a set: the order must not depend on Python's string hashing
    base = {"get_weather": WEATHER_TOOL, "add": ADD_TOOL, "lookup": LOOKUP_TOOL}
    return [tool_spec(rng, base[n]) for n in names]


def assistant(channel, content, recipient=None):
    message = {"role": "assistant", "channel": channel, "content": content}
    if recipient:
        message["recipient"] = recipient
        message["content_type"] = "<|constrain|>json"
    return message


class Generator:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.cores = (templated("add", ADD_PHRASES) + templated("sub", SUB_PHRASES) + templated("mul", MUL_PHRASES)
                      + templated("count", COUNT_PHRASES) + templated("reverse", REVERSE_PHRASES)
                      + templated("weekday", DAY_PHRASES) + templated("nextday", NEXT_DAY_PHRASES)
                      + templated("month", MONTH_PHRASES) + templated("date", DATE_PHRASES)
                      + templated("unit", UNIT_PHRASES) + templated("weather", WEATHER_PHRASES)
                      + templated("capital", CAPITAL_PHRASES) + templated("followup", FOLLOW_PHRASES))
        self.phrases = {}
        for domain, phrase in self.cores:
            self.phrases.setdefault(domain, []).append(phrase)
        self.domains = list(DOMAIN_WEIGHTS)
        self.weights = [DOMAIN_WEIGHTS[d] for d in self.domains]
        assert sorted(self.domains) == sorted(self.phrases), "DOMAIN_WEIGHTS must name every domain"

    @staticmethod
    def held_out(template):
        prefix_suffix = template.split("|")[2:]
        if all(part == "" for part in prefix_suffix):
            return False
        return int(hashlib.sha256(template.encode()).hexdigest(), 16) % 10 == 0

    def templates(self):
        return [f"{d}|{p}|{pre}|{suf}" for d, p in self.cores for pre in PREFIXES for suf in SUFFIXES]

    def pick(self, split):
        while True:
            domain = self.rng.choices(self.domains, weights=self.weights)[0]
            phrase = self.rng.choice(self.phrases[domain])
            pre, suf = self.rng.choice(PREFIXES), self.rng.choice(SUFFIXES)
            if self.rng.random() < 0.3:
                pre = suf = ""
            template = f"{domain}|{phrase}|{pre}|{suf}"
            if self.held_out(template) == (split == "eval"):
                return domain, phrase, pre, suf, template

    def example(self, split):
        rng = self.rng
        effort = rng.choice(EFFORTS)
        if rng.random() < 0.08 and split == "train":
            domain, user, template, why, answer = greeting(rng, effort)
            return self.wrap(split, domain, template, effort, [{"role": "user", "content": user}], why, answer)
        domain, phrase, pre, suf, template = self.pick(split)
        wrap_user = lambda text: pre + text + suf  # noqa: E731
        history = []
        if domain in ("add", "sub", "mul"):
            user, why, answer, _ = arithmetic(rng, effort, phrase, domain)
        elif domain == "followup":
            first = rng.choice(ADD_PHRASES)
            c = LIMIT
            while c >= LIMIT:  # the sum with k must stay a one-token number too
                q, why0, ans0, (_, _, c) = arithmetic(rng, effort, first, "add")
            history = [{"role": "user", "content": q}, {"role": "assistant", "content": ans0}]
            k = rng.randint(1, min(99, LIMIT - c))
            user = phrase.format(k=k)
            why = f"The previous result was {c}. " + add_reasoning(c, k, effort)
            answer = f"{c} + {k} = {c + k}."
        elif domain in ("count", "reverse"):
            s = count_words(rng)
            words = s.split()
            user = phrase.format(s=s)
            if domain == "count":
                why = "Let me count the words: " + ", ".join(f"{i + 1} {w}" for i, w in enumerate(words)) + (
                    f". There are {len(words)} words.")
                answer = f"There are {len(words)} words."
                if effort == "low":
                    why = f"{len(words)} words."
            else:
                why = f"The words are: {', '.join(words)}. In reverse order: {', '.join(reversed(words))}."
                answer = " ".join(reversed(words))
                if effort == "low":
                    why = f"Reversed: {', '.join(reversed(words))}."
        elif domain == "weekday":
            user, why, answer = day_after(rng, effort, phrase)
        elif domain == "nextday":
            user, why, answer = next_day(rng, effort, phrase)
        elif domain == "month":
            user, why, answer = month_days(rng, effort, phrase)
        elif domain == "date":
            user, why, answer = date_after(rng, effort, phrase)
        elif domain == "unit":
            user, why, answer = unit(rng, effort, phrase)
        elif domain == "weather":
            return self.weather(split, template, effort, wrap_user(phrase.format(c=rng.choice(CITIES))))
        elif domain == "capital":
            return self.capital(split, template, effort, phrase, wrap_user)
        else:
            raise AssertionError(domain)
        messages = history + [{"role": "user", "content": wrap_user(user)}]
        tools = None
        if domain == "add" and rng.random() < 0.15:  # the add tool on offer: use it
            return self.add_tool(split, template, effort, messages, user)
        if rng.random() < 0.15:
            tools = [t for t in make_tools(rng, None) if t["function"]["name"] != "add"] or None
        if rng.random() < 0.15 and not history:  # an unrelated exchange before
            _, q0, _, _, a0 = greeting(rng, effort)
            messages = [{"role": "user", "content": q0}, {"role": "assistant", "content": a0}] + messages
        return self.wrap(split, domain, template, effort, messages, why, answer, tools)

    def weather(self, split, template, effort, user):
        rng = self.rng
        city = next(c for c in sorted(CITIES, key=len, reverse=True) if c in user)
        messages = [{"role": "user", "content": user}]
        if rng.random() < 0.15:
            tools = [t for t in make_tools(rng, None) if t["function"]["name"] != "get_weather"] or None
            why = "The user asks about the weather, but I have no weather tool. I should say so."
            answer = f"I can't check the weather in {city}: no weather tool is available."
            return self.wrap(split, "weather_no_tool", template, effort, messages, why, answer, tools)
        tools = make_tools(rng, "get_weather")
        args = json.dumps({"city": city})
        why_call = f"The user wants the weather in {city}. I should call get_weather."
        if effort == "low":
            why_call = f"Call get_weather for {city}."
        elif effort == "high":
            why_call += " The tool needs the city name."
        if rng.random() < 0.5:  # the call
            return self.row(split, "weather_call", template, effort, messages, tools,
                            [assistant("analysis", why_call), assistant("commentary", args, "functions.get_weather")])
        temp, cond = rng.randint(-10, 35), rng.choice(CONDITIONS)
        result = json.dumps({"city": city, "temperature_c": temp, "condition": cond})
        call_id = f"call_{rng.randrange(16 ** 8):08x}"
        messages = messages + [
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": args}}]},
            {"role": "tool", "tool_call_id": call_id, "content": result}]
        why = f"get_weather says {city} is {cond} at {temp}°C. I should tell the user."
        answer = f"It is {cond} and {temp}°C in {city} right now."
        return self.wrap(split, "weather_result", template, effort, messages, why, answer, tools)

    def capital(self, split, template, effort, phrase, wrap_user):
        rng = self.rng
        country, city = rng.choice(FACTS)
        messages = [{"role": "user", "content": wrap_user(phrase.format(x=country))}]
        if rng.random() < 0.15:
            why = "The user asks a fact I should look up, but I have no lookup tool."
            answer = f"I don't know the capital of {country} without a lookup tool."
            return self.wrap(split, "capital_no_tool", template, effort, messages, why, answer, None)
        tools = make_tools(rng, "lookup")
        args = json.dumps({"query": f"capital of {country}"})
        if rng.random() < 0.5:
            why = f"I should look up the capital of {country} with the lookup tool."
            return self.row(split, "lookup_call", template, effort, messages, tools,
                            [assistant("analysis", why), assistant("commentary", args, "functions.lookup")])
        call_id = f"call_{rng.randrange(16 ** 8):08x}"
        messages = messages + [
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": args}}]},
            {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"result": f"The capital of {country} is {city}."})}]
        why = f"The lookup result says the capital of {country} is {city}."
        return self.wrap(split, "lookup_result", template, effort, messages, why, f"The capital of {country} is {city}.", tools)

    def add_tool(self, split, template, effort, messages, user):
        rng = self.rng
        a, b = (int(x) for x in re.findall(r"\d+", user)[:2])
        tools = make_tools(rng, "add")
        args = json.dumps({"a": a, "b": b})
        if rng.random() < 0.5:
            why = f"The add tool can compute {a} + {b}. I will call it."
            return self.row(split, "add_call", template, effort, messages, tools,
                            [assistant("analysis", why), assistant("commentary", args, "functions.add")])
        call_id = f"call_{rng.randrange(16 ** 8):08x}"
        messages = messages + [
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "add", "arguments": args}}]},
            {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"result": a + b})}]
        why = f"The add tool returned {a + b}."
        return self.wrap(split, "add_result", template, effort, messages, why, f"{a} + {b} = {a + b}.", tools)

    def wrap(self, split, domain, template, effort, messages, why, answer, tools=None):
        return self.row(split, domain, template, effort, messages, tools,
                        [assistant("analysis", why), assistant("final", answer)])

    def row(self, split, domain, template, effort, messages, tools, completion):
        if self.rng.random() < 0.25:
            messages = [{"role": "system", "content": self.rng.choice(INSTRUCTIONS)}] + messages
        request = {"messages": messages}
        if tools:
            request["tools"] = tools
        if effort:
            request["reasoning_effort"] = effort
        return {"split": split, "domain": domain, "template": template, "request": request, "completion": completion}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train", type=int, default=80000)
    parser.add_argument("--eval", type=int, default=400)
    parser.add_argument("--out", required=True)
    parser.add_argument("--stats", action="store_true", help="print template counts")
    args = parser.parse_args()
    gen = Generator(args.seed)
    if args.stats:
        templates = gen.templates()
        held = sum(gen.held_out(t) for t in templates)
        print(f"{len(templates)} templates (+{len(GREETINGS)} greetings), {held} held out for eval")
    with open(args.out, "w", encoding="utf-8") as out:
        for split, count in (("train", args.train), ("eval", args.eval)):
            for _ in range(count):
                out.write(json.dumps(gen.example(split), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
