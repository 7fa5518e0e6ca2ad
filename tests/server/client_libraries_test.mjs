// The client libraries gpt-oss users call, against a running `gossamer serve --test-backend fake` with the
// scripts of tests/server/scripted_backend.h: chat, streaming, tools (with a full round trip) and the
// Responses API, each through the library's own default path.
//   GOSSAMER_BASE_URL  e.g. http://127.0.0.1:8000/v1
//   GOSSAMER_API_KEY   the key the server was started with
//   GOSSAMER_LIBRARY   openai | ai | langchain | agents
// Prints "N checks passed (LIBRARY)"; exits non-zero on the first failed check.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { z } from 'zod';

const baseURL = process.env.GOSSAMER_BASE_URL;
const apiKey = process.env.GOSSAMER_API_KEY;
const library = process.env.GOSSAMER_LIBRARY;
assert.ok(baseURL && library, 'GOSSAMER_BASE_URL and GOSSAMER_LIBRARY are required');
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
const model = (await client.models.list()).data[0].id;

const ANSWER = 'Please answer SCRIPTANSWER';
const TOOL = 'Please call SCRIPTTOOL';
const TOOL_RESULT = 'sunny SCRIPTWEATHERDONE';  // makes the fake model answer "It is sunny in Paris."
const weatherSchema = { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } }, required: ['city', 'unit'] };

const checks = [];
const check = (name, fn) => checks.push({ name, fn });

if (library === 'openai') {
  const chatTools = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather', parameters: weatherSchema } }];
  const responseTools = [{ type: 'function', name: 'get_weather', description: 'Current weather', parameters: weatherSchema, strict: false }];
  check('chat', async () => {
    const r = await client.chat.completions.create({ model, messages: [{ role: 'user', content: ANSWER }] });
    assert.equal(r.choices[0].message.content, 'The answer is 42.');
    assert.equal(r.choices[0].message.reasoning, 'The user wants 42. Say 42.');
    assert.equal(r.choices[0].message.reasoning_content, 'The user wants 42. Say 42.');
  });
  check('chat stream', async () => {
    let text = '';
    for await (const chunk of await client.chat.completions.create({ model, messages: [{ role: 'user', content: ANSWER }], stream: true })) {
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    assert.equal(text, 'The answer is 42.');
  });
  check('chat tool round trip', async () => {
    const messages = [{ role: 'user', content: TOOL }];
    const first = await client.chat.completions.create({ model, messages, tools: chatTools });
    const call = first.choices[0].message.tool_calls[0];
    assert.equal(first.choices[0].finish_reason, 'tool_calls');
    assert.equal(call.function.name, 'get_weather');
    assert.equal(JSON.parse(call.function.arguments).city, 'Paris');
    messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: TOOL_RESULT });
    const second = await client.chat.completions.create({ model, messages, tools: chatTools });
    assert.equal(second.choices[0].message.content, 'It is sunny in Paris.');
  });
  check('responses', async () => {
    const r = await client.responses.create({ model, input: ANSWER });
    assert.equal(r.output_text, 'The answer is 42.');
    assert.equal(r.output[0].type, 'reasoning');
    const again = await client.responses.retrieve(r.id);
    assert.equal(again.output_text, 'The answer is 42.');
  });
  check('responses stream', async () => {
    const stream = client.responses.stream({ model, input: ANSWER });
    let text = '';
    stream.on('response.output_text.delta', (event) => { text += event.delta; });
    const final = await stream.finalResponse();
    assert.equal(text, 'The answer is 42.');
    assert.equal(final.output_text, 'The answer is 42.');
  });
  check('responses tool round trip (previous_response_id)', async () => {
    const first = await client.responses.create({ model, input: TOOL, tools: responseTools });
    const call = first.output.find((item) => item.type === 'function_call');
    assert.equal(call.name, 'get_weather');
    const second = await client.responses.create({
      model, previous_response_id: first.id, tools: responseTools,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: TOOL_RESULT }],
    });
    assert.equal(second.output_text, 'It is sunny in Paris.');
  });
} else if (library === 'ai') {
  const { generateText, streamText, tool, stepCountIs } = await import('ai');
  const { createOpenAI } = await import('@ai-sdk/openai');
  const provider = createOpenAI({ baseURL, apiKey });
  const tools = {
    get_weather: tool({ description: 'Current weather', inputSchema: z.object({ city: z.string(), unit: z.string() }),
                        execute: async () => TOOL_RESULT }),
  };
  check('generateText (Responses API, the default)', async () => {
    const r = await generateText({ model: provider(model), prompt: ANSWER, maxRetries: 0 });
    assert.equal(r.text, 'The answer is 42.');
    assert.equal(r.reasoningText, 'The user wants 42. Say 42.');
  });
  check('streamText (Responses API)', async () => {
    const r = streamText({ model: provider(model), prompt: ANSWER, maxRetries: 0 });
    let text = '';
    for await (const delta of r.textStream) text += delta;
    assert.equal(text, 'The answer is 42.');
  });
  check('tool round trip (Responses API)', async () => {
    const r = await generateText({ model: provider(model), prompt: TOOL, tools, stopWhen: stepCountIs(3), maxRetries: 0 });
    assert.equal(r.steps[0].toolCalls[0].toolName, 'get_weather');
    assert.equal(r.steps[0].toolCalls[0].input.city, 'Paris');
    assert.equal(r.text, 'It is sunny in Paris.');
  });
  check('multi-turn with previousResponseId (Responses API)', async () => {
    const first = await generateText({ model: provider(model), prompt: ANSWER, maxRetries: 0 });
    const previousResponseId = first.providerMetadata.openai.responseId;
    assert.ok(previousResponseId);
    // The fake model answers from a trigger anywhere in the conversation: only the chained turn holds one.
    const second = await generateText({ model: provider(model), prompt: 'And again?', maxRetries: 0,
                                        providerOptions: { openai: { previousResponseId } } });
    assert.equal(second.text, 'The answer is 42.');
  });
  check('chat completions model', async () => {
    const r = await generateText({ model: provider.chat(model), prompt: ANSWER, maxRetries: 0 });
    assert.equal(r.text, 'The answer is 42.');
    const s = streamText({ model: provider.chat(model), prompt: TOOL, tools, stopWhen: stepCountIs(3), maxRetries: 0 });
    let text = '';
    for await (const delta of s.textStream) text += delta;
    assert.equal(text, 'It is sunny in Paris.');
  });
} else if (library === 'langchain') {
  const { ChatOpenAI } = await import('@langchain/openai');
  const { HumanMessage, ToolMessage } = await import('@langchain/core/messages');
  const make = (options = {}) => new ChatOpenAI({ model, apiKey, configuration: { baseURL }, maxRetries: 0, ...options });
  const chatTools = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather', parameters: weatherSchema } }];
  check('invoke', async () => {
    const r = await make().invoke(ANSWER);
    assert.equal(r.content, 'The answer is 42.');
    assert.equal(r.additional_kwargs.reasoning_content, 'The user wants 42. Say 42.');
  });
  check('stream', async () => {
    let text = '';
    for await (const chunk of await make().stream(ANSWER)) text += chunk.content;
    assert.equal(text, 'The answer is 42.');
  });
  check('tool round trip', async () => {
    const llm = make().bindTools(chatTools);
    const history = [new HumanMessage(TOOL)];
    const first = await llm.invoke(history);
    assert.equal(first.tool_calls[0].name, 'get_weather');
    assert.equal(first.tool_calls[0].args.city, 'Paris');
    history.push(first, new ToolMessage({ tool_call_id: first.tool_calls[0].id, content: TOOL_RESULT }));
    const second = await llm.invoke(history);
    assert.equal(second.content, 'It is sunny in Paris.');
  });
  check('useResponsesApi', async () => {
    const llm = make({ useResponsesApi: true });
    const r = await llm.invoke(ANSWER);
    assert.equal(r.text, 'The answer is 42.');
    let text = '';
    for await (const chunk of await llm.stream(ANSWER)) text += chunk.text;
    assert.equal(text, 'The answer is 42.');
    const tooled = await llm.bindTools(chatTools).invoke(TOOL);
    assert.equal(tooled.tool_calls[0].name, 'get_weather');
    const round = await llm.bindTools(chatTools).invoke(
      [new HumanMessage(TOOL), tooled, new ToolMessage({ tool_call_id: tooled.tool_calls[0].id, content: TOOL_RESULT })]);
    assert.equal(round.text, 'It is sunny in Paris.');
    const chained = await llm.invoke('And again?', { previous_response_id: r.response_metadata.id });
    assert.equal(chained.text, 'The answer is 42.');
  });
} else if (library === 'agents') {
  const { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } = await import('@openai/agents');
  setDefaultOpenAIClient(client);
  setTracingDisabled(true);
  const getWeather = tool({ name: 'get_weather', description: 'Current weather',
                            parameters: z.object({ city: z.string(), unit: z.string() }), execute: async () => TOOL_RESULT });
  const agent = new Agent({ name: 'Weather', instructions: 'Answer briefly.', model, tools: [getWeather] });
  check('run (Responses API, the default)', async () => {
    const r = await run(agent, ANSWER);
    assert.equal(r.finalOutput, 'The answer is 42.');
  });
  check('run with a tool', async () => {
    const r = await run(agent, TOOL);
    assert.equal(r.finalOutput, 'It is sunny in Paris.');
    assert.ok(r.newItems.some((item) => item.type === 'tool_call_output_item'));
  });
  check('streamed run', async () => {
    const r = await run(agent, TOOL, { stream: true });
    for await (const event of r) void event;
    await r.completed;
    assert.equal(r.finalOutput, 'It is sunny in Paris.');
  });
  check('multi-turn with previousResponseId', async () => {
    const first = await run(agent, ANSWER);
    // The fake model answers from a trigger anywhere in the conversation: only the chained turn holds one.
    const second = await run(agent, 'And again?', { previousResponseId: first.lastResponseId });
    assert.equal(second.finalOutput, 'The answer is 42.');
    assert.notEqual(second.lastResponseId, first.lastResponseId);
  });
  check('chat completions API', async () => {
    setOpenAIAPI('chat_completions');
    const r = await run(new Agent({ name: 'Weather', model, tools: [getWeather] }), TOOL);
    setOpenAIAPI('responses');
    assert.equal(r.finalOutput, 'It is sunny in Paris.');
  });
} else {
  throw new Error(`unknown GOSSAMER_LIBRARY ${library}`);
}

for (const { name, fn } of checks) {
  try {
    await fn();
  } catch (error) {
    console.error(`FAILED ${library}: ${name}\n${error?.stack ?? error}`);
    if (error?.error) console.error(JSON.stringify(error.error));
    process.exit(1);
  }
  console.log(`ok ${library}: ${name}`);
}
console.log(`${checks.length} checks passed (${library})`);
