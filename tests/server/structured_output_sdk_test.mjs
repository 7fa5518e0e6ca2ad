// Structured output through the official `openai` npm client against `gossamer serve` on the embedded
// random model (the adversary: its logits are noise, so only the constraint makes the answers valid).
//   GOSSAMER_BASE_URL  e.g. http://127.0.0.1:8000/v1
// Every answer that ends (stop / tool_calls) must parse and validate; a run that only reasons until
// max_tokens ends with `length`, never with invalid JSON. Exits non-zero on the first failed check.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const baseURL = process.env.GOSSAMER_BASE_URL;
assert.ok(baseURL, 'GOSSAMER_BASE_URL is required');
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
const model = (await client.models.list()).data[0].id;
const seeds = [1, 2, 3, 4, 5, 6];

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 20 },
    age: { type: 'integer', minimum: 0, maximum: 130 },
    tags: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 3 },
  },
  required: ['name', 'age', 'tags'],
  additionalProperties: false,
};
const checkPerson = (value) => {
  assert.deepEqual(Object.keys(value).sort(), ['age', 'name', 'tags']);
  assert.ok(Number.isInteger(value.age) && value.age >= 0 && value.age <= 130);
  assert.ok([...value.name].length <= 20);
  assert.ok(Array.isArray(value.tags) && value.tags.length <= 3 && value.tags.every((t) => typeof t === 'string' && [...t].length <= 8));
};
const tools = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 30 }, unit: { enum: ['celsius', 'fahrenheit'] } }, required: ['city', 'unit'], additionalProperties: false } } },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string', maxLength: 10 } }, required: ['zone'] } } },
];
const checkArguments = (call) => {
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === 'get_weather') {
    assert.deepEqual(Object.keys(args).sort(), ['city', 'unit']);
    assert.ok(['celsius', 'fahrenheit'].includes(args.unit));
  } else {
    assert.equal(call.function.name, 'get_time');
    assert.equal(typeof args.zone, 'string');
  }
};

const counts = {};
const tally = (name, reason) => { counts[name] = counts[name] ?? {}; counts[name][reason] = (counts[name][reason] ?? 0) + 1; };

// All requests at once (the engine batches them), checked as they come back.
const jobs = [];
for (const seed of seeds) jobs.push((async () => {
  const completion = await client.chat.completions.create({
    model, seed, max_tokens: 130, messages: [{ role: 'user', content: 'Describe a person as JSON.' }],
    response_format: { type: 'json_schema', json_schema: { name: 'person', schema: person, strict: true } },
  });
  const choice = completion.choices[0];
  tally('json_schema', choice.finish_reason);
  assert.ok(['stop', 'length'].includes(choice.finish_reason), choice.finish_reason);
  if (choice.finish_reason === 'stop') checkPerson(JSON.parse(choice.message.content));
})());

for (const seed of seeds) jobs.push((async () => {
  const chunks = [];
  for await (const chunk of await client.chat.completions.create({
    model, seed, max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Any JSON object.' }],
    response_format: { type: 'json_object' },
  })) chunks.push(chunk);
  const reason = chunks.flatMap((c) => c.choices).map((c) => c.finish_reason).find(Boolean);
  tally('json_object stream', reason);
  if (reason === 'stop') {
    const text = chunks.flatMap((c) => c.choices).map((c) => c.delta.content ?? '').join('');
    const value = JSON.parse(text);
    assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value));
  }
})());

for (const seed of seeds) {
  for (const tool_choice of ['required', { type: 'function', function: { name: 'get_time' } }]) jobs.push((async () => {
    const completion = await client.chat.completions.create({
      model, seed, max_tokens: 100, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, tool_choice,
    });
    const choice = completion.choices[0];
    const name = typeof tool_choice === 'string' ? 'required' : 'named';
    tally(name, choice.finish_reason);
    assert.ok(['tool_calls', 'length'].includes(choice.finish_reason), `${name}: ${choice.finish_reason}`);
    if (choice.finish_reason === 'tool_calls') {
      assert.equal(choice.message.tool_calls.length, 1);
      checkArguments(choice.message.tool_calls[0]);
      if (name === 'named') assert.equal(choice.message.tool_calls[0].function.name, 'get_time');
    }
  })());
  jobs.push((async () => {
  const none = await client.chat.completions.create({
    model, seed, max_tokens: 24, messages: [{ role: 'user', content: 'Weather?' }], tools, tool_choice: 'none',
  });
  tally('none', none.choices[0].finish_reason);
  assert.notEqual(none.choices[0].finish_reason, 'tool_calls');
  assert.ok(!none.choices[0].message.tool_calls || none.choices[0].message.tool_calls.length === 0);
  })());
}
await Promise.all(jobs);

await assert.rejects(
  client.chat.completions.create({
    model, max_tokens: 5, messages: [{ role: 'user', content: 'x' }],
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', patternProperties: {} } } },
  }),
  (error) => error instanceof OpenAI.BadRequestError && error.param === 'response_format.json_schema.schema' &&
    error.message.includes('patternProperties'));

// Some answers must have completed where the schema bounds the answer; a plain JSON object (open: up to
// 32 properties of 512-character strings, server/structured_output.h) need not close within max_tokens
// (each of its finished answers was validated above).
for (const name of ['json_schema', 'required', 'named']) {
  assert.ok((counts[name].stop ?? 0) + (counts[name].tool_calls ?? 0) > 0, `${name}: no answer completed ${JSON.stringify(counts[name])}`);
}
console.log(`structured output checks passed ${JSON.stringify(counts)}`);
