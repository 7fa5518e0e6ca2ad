// Conformance test with the official `openai` npm client against a running `gossamer serve`.
//   GOSSAMER_BASE_URL  e.g. http://127.0.0.1:8000/v1
//   GOSSAMER_API_KEY   the key the server was started with
//   GOSSAMER_MODE      "embedded" (random model: shapes, streaming, errors, auth) or
//                      "scripted" (fake backend with tests/server/scripted_backend.h scripts: tool calls, reasoning)
// Exits non-zero on the first failed check.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

import { check, collect, runChecks } from './sdk_checks.mjs';

const baseURL = process.env.GOSSAMER_BASE_URL;
const apiKey = process.env.GOSSAMER_API_KEY;
const mode = process.env.GOSSAMER_MODE ?? 'embedded';
assert.ok(baseURL, 'GOSSAMER_BASE_URL is required');
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120_000 });

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } } },
  },
}];

let model;
check('models.list', async () => {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  model = models.data[0].id;
  assert.equal(models.data[0].object, 'model');
});

if (mode === 'embedded') {
  check('chat non-stream', async () => {
    const completion = await client.chat.completions.create({
      model, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello!' }],
      max_completion_tokens: 6, temperature: 0.7, seed: 1,
    });
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.choices.length, 1);
    assert.equal(completion.choices[0].message.role, 'assistant');
    assert.ok(['length', 'stop'].includes(completion.choices[0].finish_reason));
    assert.ok(completion.usage.prompt_tokens > 0);
    assert.ok(completion.usage.completion_tokens > 0 && completion.usage.completion_tokens <= 6);
    assert.equal(completion.usage.total_tokens, completion.usage.prompt_tokens + completion.usage.completion_tokens);
  });

  check('chat stream with usage', async () => {
    const chunks = await collect(await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Count to three.' }], max_tokens: 5, stream: true,
      stream_options: { include_usage: true },
    }));
    assert.ok(chunks.length >= 3);
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    const usage = chunks.filter((c) => c.usage);
    assert.equal(usage.length, 1);
    assert.equal(chunks.at(-1), usage[0], 'the usage chunk comes last');
    assert.deepEqual(usage[0].choices, []);
    const finish = chunks.flatMap((c) => c.choices).map((c) => c.finish_reason).filter(Boolean);
    assert.equal(finish.length, 1);
    assert.ok(usage[0].usage.completion_tokens >= 1 && usage[0].usage.completion_tokens <= 5);
    for (const chunk of chunks) assert.equal(chunk.id, chunks[0].id);
  });

  check('completions', async () => {
    const completion = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 4 });
    assert.equal(completion.object, 'text_completion');
    assert.equal(typeof completion.choices[0].text, 'string');
    assert.equal(completion.usage.completion_tokens, 4);
  });

  check('unknown model is 404', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }], max_tokens: 1 }),
      (error) => error instanceof OpenAI.NotFoundError && error.status === 404 && error.code === 'model_not_found');
  });

  check('bad parameter is 400 with param', async () => {
    await assert.rejects(
      client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }], temperature: 7 }),
      (error) => error instanceof OpenAI.BadRequestError && error.param === 'temperature');
  });

  check('context overflow is 400 context_length_exceeded', async () => {
    await assert.rejects(
      client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }], max_tokens: 10_000_000 }),
      (error) => error instanceof OpenAI.BadRequestError && error.code === 'context_length_exceeded');
  });

  check('wrong API key is 401', async () => {
    const stranger = new OpenAI({ baseURL, apiKey: 'sk-wrong', maxRetries: 0 });
    await assert.rejects(
      stranger.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }], max_tokens: 1 }),
      (error) => error instanceof OpenAI.AuthenticationError && error.status === 401);
  });
}

if (mode === 'scripted') {
  check('tool call non-stream', async () => {
    const completion = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Please call SCRIPTTOOL' }], tools, max_tokens: 64,
    });
    const choice = completion.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.tool_calls.length, 1);
    assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
    assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { city: 'Paris', unit: 'celsius' });
    assert.equal(choice.message.reasoning, 'Need weather for Paris.');
  });

  check('tool call stream', async () => {
    const chunks = await collect(await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Please call SCRIPTTOOL' }], tools, max_tokens: 64, stream: true,
      stream_options: { include_usage: true },
    }));
    let name = '', args = '', id = '', reasoning = '', finish = '';
    for (const chunk of chunks) {
      for (const choice of chunk.choices) {
        reasoning += choice.delta.reasoning ?? '';
        for (const call of choice.delta.tool_calls ?? []) {
          assert.equal(call.index, 0);
          if (call.id) { id = call.id; name = call.function.name; }
          args += call.function?.arguments ?? '';
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    }
    assert.ok(id.startsWith('call_'));
    assert.equal(name, 'get_weather');
    assert.deepEqual(JSON.parse(args), { city: 'Paris', unit: 'celsius' });
    assert.equal(reasoning, 'Need weather for Paris.');
    assert.equal(finish, 'tool_calls');
    assert.ok(chunks.at(-1).usage.completion_tokens_details.reasoning_tokens > 0);
  });

  check('tool result round trip renders', async () => {
    const completion = await client.chat.completions.create({
      model, max_tokens: 64, tools,
      messages: [
        { role: 'user', content: 'What is the weather in Paris?' },
        { role: 'assistant', content: null, reasoning: 'Need the tool.',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
        { role: 'user', content: 'Please answer SCRIPTANSWER' },
      ],
    });
    assert.equal(completion.choices[0].message.content, 'The answer is 42.');
    assert.equal(completion.choices[0].finish_reason, 'stop');
  });
}

await runChecks(mode);
