"""The word lists, phrasings and tools of tools/tiny_corpus.py (docs/tiny-model.md)."""

EFFORTS = [None, None, "low", "medium", "high"]  # None: the request names none (the system prompt says medium)
PREFIXES = ["", "Hi! ", "Hey, ", "Please tell me: ", "Quick question: ", "Can you help? ", "I have a question. ", "OK, ",
            "Hello. ", "Question: "]
SUFFIXES = ["", " Thanks!", " Please.", " Thank you.", " Answer briefly.", " :)", " Be quick."]
INSTRUCTIONS = ["You are a helpful assistant.", "Be concise.", "You are a friendly assistant that answers briefly.",
                "Answer the user's questions.", "You are a careful assistant. Think before answering."]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = [("January", 31), ("February", 28), ("March", 31), ("April", 30), ("May", 31), ("June", 30), ("July", 31),
          ("August", 31), ("September", 30), ("October", 31), ("November", 30), ("December", 31)]
WORDS = ("apple river stone cloud green quick brown fox jumps over lazy dog red blue house tree bird sun moon star "
         "music water fire light dark small big happy cat sings runs reads book table chair window door road city "
         "train boat ship car bike cold warm rain snow wind sea sky hill lake bread milk tea coffee cake paper pen "
         "garden flower leaf winter summer spring autumn morning night friend family game ball song dance").split()
CITIES = ["Paris", "London", "Tokyo", "Berlin", "Madrid", "Rome", "Oslo", "Cairo", "Lima", "Sydney", "Toronto", "Dublin",
          "Vienna", "Prague", "Lisbon", "Seoul", "Boston", "Chicago", "Denver", "Miami", "Nairobi", "Delhi", "Mumbai",
          "Athens", "Warsaw", "Zurich", "Stockholm", "Helsinki", "Bangkok", "Mexico City"]
CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "snowy", "foggy", "clear"]
FACTS = [("France", "Paris"), ("Japan", "Tokyo"), ("Germany", "Berlin"), ("Spain", "Madrid"), ("Italy", "Rome"),
         ("Norway", "Oslo"), ("Egypt", "Cairo"), ("Peru", "Lima"), ("Canada", "Ottawa"), ("Ireland", "Dublin"),
         ("Austria", "Vienna"), ("Portugal", "Lisbon"), ("Kenya", "Nairobi"), ("Greece", "Athens"), ("Poland", "Warsaw"),
         ("Sweden", "Stockholm"), ("Finland", "Helsinki"), ("Thailand", "Bangkok"), ("Chile", "Santiago"),
         ("Brazil", "Brasilia"), ("Australia", "Canberra"), ("India", "New Delhi"), ("China", "Beijing"),
         ("Mexico", "Mexico City"), ("Cuba", "Havana"), ("Turkey", "Ankara")]
UNITS = [("kilometers", "meters", 1000), ("meters", "centimeters", 100), ("hours", "minutes", 60),
         ("minutes", "seconds", 60), ("feet", "inches", 12), ("kilograms", "grams", 1000), ("days", "hours", 24),
         ("weeks", "days", 7), ("liters", "milliliters", 1000), ("yards", "feet", 3)]

WEATHER_TOOL = {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string", "description": "The city name, e.g. Paris"}}, "required": ["city"]}}
ADD_TOOL = {"name": "add", "parameters": {"type": "object", "properties": {
    "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}
LOOKUP_TOOL = {"name": "lookup", "parameters": {"type": "object", "properties": {
    "query": {"type": "string", "description": "What to look up"}}, "required": ["query"]}}
DESCRIPTIONS = {"get_weather": ["Get the current weather for a city.", "Returns the current weather in a city.",
                                "Gets the weather."],
                "add": ["Add two integers.", "Returns a + b.", "Adds two numbers."],
                "lookup": ["Look up a fact in the knowledge base.", "Searches a small encyclopedia.",
                           "Looks up a fact."]}

# The share of each domain among the non-greeting conversations (greetings: 8% of the training split).
# Arithmetic gets over half: its analyses are long and it is what the first checkpoint could not do.
DOMAIN_WEIGHTS = {"add": 0.30, "sub": 0.20, "followup": 0.06, "mul": 0.05, "count": 0.05, "reverse": 0.05,
                  "weekday": 0.04, "nextday": 0.03, "month": 0.03, "date": 0.04, "unit": 0.04, "weather": 0.07,
                  "capital": 0.04}


ADD_PHRASES = ["What is {a} + {b}?", "What is {a} plus {b}?", "Compute {a} + {b}.", "Add {a} and {b}.",
               "{a} + {b} = ?", "What's {a} + {b}?", "Calculate {a} + {b}.", "What do you get if you add {a} and {b}?",
               "Sum {a} and {b}.", "How much is {a} + {b}?", "What is the sum of {a} and {b}?", "{a}+{b}?"]
SUB_PHRASES = ["What is {a} - {b}?", "What is {a} minus {b}?", "Compute {a} - {b}.", "Subtract {b} from {a}.",
               "{a} - {b} = ?", "What's {a} - {b}?", "Calculate {a} - {b}.", "How much is {a} minus {b}?",
               "What is the difference between {a} and {b}?"]
MUL_PHRASES = ["What is {a} × {b}?", "What is {a} times {b}?", "Compute {a} * {b}.", "Multiply {a} by {b}.",
               "What's {a} * {b}?", "How much is {a} times {b}?", "What is the product of {a} and {b}?", "{a}*{b}?"]
COUNT_PHRASES = ["How many words are in \"{s}\"?", "Count the words in: {s}", "How many words does this have: {s}",
                 "Count the words: \"{s}\"", "Number of words in \"{s}\"?", "How many words: {s}"]
REVERSE_PHRASES = ["Reverse the words in: {s}", "Reverse the order of the words: \"{s}\"", "Say \"{s}\" backwards, word by word.",
                   "Write these words in reverse order: {s}", "Reverse: {s}", "Put the words of \"{s}\" in reverse order."]
DAY_PHRASES = ["If today is {d}, what day will it be in {n} days?", "Today is {d}. What day is it {n} days from now?",
               "What day of the week is {n} days after {d}?", "It's {d}. Which weekday comes {n} days later?"]
NEXT_DAY_PHRASES = ["What day comes after {d}?", "Which day follows {d}?", "What is the day after {d}?"]
MONTH_PHRASES = ["How many days are in {m}?", "How many days does {m} have?", "Number of days in {m}?"]
DATE_PHRASES = ["What is the date {n} days after {m} {day}?", "What date is {n} days after {m} {day}?",
                "If today is {m} {day}, what is the date in {n} days?"]
UNIT_PHRASES = ["Convert {n} {u} to {v}.", "How many {v} are in {n} {u}?", "What is {n} {u} in {v}?",
                "{n} {u} is how many {v}?", "Express {n} {u} in {v}."]
WEATHER_PHRASES = ["What's the weather in {c}?", "What is the weather like in {c}?", "How is the weather in {c} today?",
                   "Is it sunny in {c}?", "Tell me the weather in {c}.", "Weather in {c}?", "What's the temperature in {c}?"]
CAPITAL_PHRASES = ["What is the capital of {x}?", "Which city is the capital of {x}?", "Name the capital of {x}.",
                   "What's the capital city of {x}?"]
FOLLOW_PHRASES = ["Now add {k} to that.", "And if you add {k}?", "Add {k} to the result.", "What is that plus {k}?"]

GREETINGS = [
    ("Hello!", "Hello! How can I help you today?"), ("Hello", "Hello! How can I help you today?"),
    ("Hi", "Hi! How can I help you today?"), ("Hi!", "Hi! How can I help you today?"),
    ("Hey", "Hey! How can I help you today?"), ("Hey there!", "Hey! How can I help you today?"),
    ("Good morning", "Good morning! How can I help you today?"), ("Good morning!", "Good morning! How can I help you today?"),
    ("Good evening", "Good evening! How can I help you today?"), ("Good afternoon!", "Good afternoon! How can I help you today?"),
    ("Hello, how are you?", "I'm doing well, thank you! How can I help you today?"),
    ("How are you?", "I'm doing well, thank you! How can I help you today?"),
    ("How are you doing?", "I'm doing well, thank you! How can I help you today?"),
    ("Thanks!", "You're welcome!"), ("Thank you", "You're welcome!"), ("Thank you very much!", "You're welcome!"),
    ("Bye", "Goodbye! Have a nice day."), ("Goodbye!", "Goodbye! Have a nice day."),
    ("Who are you?", "I am a tiny gpt-oss model built into gossamer. I can do small arithmetic, count and reverse words, "
                     "answer questions about weekdays, months and dates, convert units, and call tools."),
    ("What can you do?", "I am a tiny gpt-oss model built into gossamer. I can do small arithmetic, count and reverse words, "
                         "answer questions about weekdays, months and dates, convert units, and call tools."),
    ("What are you?", "I am a tiny gpt-oss model built into gossamer. I can do small arithmetic, count and reverse words, "
                      "answer questions about weekdays, months and dates, convert units, and call tools."),
    ("Say hello.", "Hello!"), ("Say hi", "Hi!"), ("Tell me a joke.", "I only know small sums, words, dates and units, so no jokes, sorry!"),
    ("Write a poem.", "I am too small to write poems, but I can help with arithmetic, words, dates and units."),
]
