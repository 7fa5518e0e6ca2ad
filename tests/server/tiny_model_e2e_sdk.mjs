// The official `openai` npm client against `gossamer serve` on the trained embedded default (no model
// argument): reasoning and answers, tool calls (stream and not), the tool-result round trip, stop
// strings, usage. Greedy, on prompts the model answers correctly (tests/server/tiny_model_e2e_test.cpp
// has the plain-HTTP twin). GOSSAMER_BASE_URL: e.g. http://127.0.0.1:8000/v1. Exits non-zero on a failure.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

import { check, collect, runChecks } from './sdk_checks.mjs';

const baseURL = process.env.GOSSAMER_BASE_URL;
assert.ok(baseURL, 'GOSSAMER_BASE_URL is required');
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather', description: 'Get the current weather for a city.',
    parameters: { type: 'object', properties: { city: { type: 'string', description: 'The city name, e.g. Paris' } }, required: ['city'] },
  },
}];
let model;

check('models list names the trained embedded model', async () => {
  const models = await client.models.list();
  model = models.data[0].id;
  assert.equal(model, 'gossamer-embedded-tiny-trained');
});

check('reasoning, then the final answer, with usage', async () => {
  const completion = await client.chat.completions.create({
    model, temperature: 0, messages: [{ role: 'user', content: 'What day comes after Friday?' }],
  });
  const choice = completion.choices[0];
  assert.equal(choice.message.content, 'Saturday comes after Friday.');
  assert.match(choice.message.reasoning, /The day after Friday is Saturday\./);
  assert.equal(choice.finish_reason, 'stop');
  const usage = completion.usage;
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  assert.ok(usage.completion_tokens_details.reasoning_tokens > 10);
  assert.ok(usage.completion_tokens > usage.completion_tokens_details.reasoning_tokens);
});

check('streamed reasoning and answer', async () => {
  const chunks = await collect(await client.chat.completions.create({
    model, temperature: 0, stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'What is 7 times 8?' }],
  }));
  let reasoning = '', content = '', finish = '';
  for (const chunk of chunks) {
    for (const choice of chunk.choices) {
      reasoning += choice.delta.reasoning ?? '';
      content += choice.delta.content ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.equal(content, '7 × 8 = 56.');
  assert.match(reasoning, /7 × 8 = 56/);
  assert.equal(finish, 'stop');
  assert.ok(chunks.at(-1).usage.completion_tokens > 0);
});

check('get_weather tool call, non-stream', async () => {
  const completion = await client.chat.completions.create({
    model, temperature: 0, tools, messages: [{ role: 'user', content: "What's the weather in Tokyo?" }],
  });
  const choice = completion.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls.length, 1);
  assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { city: 'Tokyo' });
  assert.match(choice.message.reasoning, /get_weather/);
});

check('get_weather tool call, stream', async () => {
  const chunks = await collect(await client.chat.completions.create({
    model, temperature: 0, tools, stream: true, messages: [{ role: 'user', content: "What's the weather in Tokyo?" }],
  }));
  let name = '', args = '', id = '', finish = '';
  for (const chunk of chunks) {
    for (const choice of chunk.choices) {
      for (const call of choice.delta.tool_calls ?? []) {
        if (call.id) { id = call.id; name = call.function.name; }
        args += call.function?.arguments ?? '';
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.ok(id.startsWith('call_'));
  assert.equal(name, 'get_weather');
  assert.deepEqual(JSON.parse(args), { city: 'Tokyo' });
  assert.equal(finish, 'tool_calls');
});

check('tool result round trip', async () => {
  const first = await client.chat.completions.create({
    model, temperature: 0, tools, messages: [{ role: 'user', content: "What's the weather in Tokyo?" }],
  });
  const call = first.choices[0].message.tool_calls[0];
  const completion = await client.chat.completions.create({
    model, temperature: 0, tools,
    messages: [
      { role: 'user', content: "What's the weather in Tokyo?" },
      { role: 'assistant', content: null, tool_calls: [call] },
      // The tool result spaced as the corpus writes it (Python's json.dumps), as the plain-HTTP twin sends it: the
      // shipped checkpoint answers JSON.stringify's compact form wrongly (docs/tiny-model.md, what it gets wrong).
      { role: 'tool', tool_call_id: call.id, content: '{"city": "Tokyo", "temperature_c": 21, "condition": "sunny"}' },
    ],
  });
  assert.equal(completion.choices[0].message.content, 'It is sunny and 21°C in Tokyo right now.');
  assert.equal(completion.choices[0].finish_reason, 'stop');
});

check('stop string', async () => {
  const completion = await client.chat.completions.create({
    model, temperature: 0, stop: [' after'], messages: [{ role: 'user', content: 'What day comes after Friday?' }],
  });
  assert.equal(completion.choices[0].message.content, 'Saturday comes');
  assert.equal(completion.choices[0].finish_reason, 'stop');
});

await runChecks('tiny model');
