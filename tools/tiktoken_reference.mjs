// Reference token ids from the npm `tiktoken` package (tiktoken@1.0.22, WASM build of OpenAI's Rust core),
// for gossamer's differential tests and benchmark.
//
//   node tools/tiktoken_reference.mjs --input segments.json --output ids.json
//     input:  {"segments": ["text", ...]}
//     output: {"segments": [[ids], ...],          encode_ordinary of each segment
//              "whole": [ids],                    encode_ordinary of all segments joined
//              "whole_special": [ids]}            encode of the joined text, o200k_harmony specials allowed
//   node tools/tiktoken_reference.mjs --bench corpus.txt [--seconds 3]
//     prints {bytes, tokens, runs, seconds, mb_per_s (wall), cpu_mb_per_s} for encode_ordinary of the file
//
// The o200k_harmony specials (openai-harmony's list) extend o200k_base's, as tiktoken's
// o200k_harmony does.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), '..', 'package.json'));
const { get_encoding } = require('tiktoken');

function harmonySpecials() {
  const named = {
    199998: '<|startoftext|>', 199999: '<|endoftext|>', 200002: '<|return|>', 200003: '<|constrain|>',
    200005: '<|channel|>', 200006: '<|start|>', 200007: '<|end|>', 200008: '<|message|>', 200012: '<|call|>',
  };
  const specials = {};
  for (let id = 199998; id < 201088; ++id) specials[named[id] ?? `<|reserved_${id}|>`] = id;
  specials['<|endofprompt|>'] = 200018;
  return specials;
}

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const enc = get_encoding('o200k_base', harmonySpecials());
try {
  if (process.argv.includes('--bench')) {
    const text = readFileSync(arg('--bench'), 'utf8');
    const bytes = Buffer.byteLength(text, 'utf8');
    const minSeconds = Number(arg('--seconds', '3'));
    let tokens = enc.encode_ordinary(text).length;  // warm-up
    let runs = 0;
    const start = process.hrtime.bigint();
    const cpuStart = process.cpuUsage();
    let elapsed = 0;
    while (elapsed < minSeconds || runs < 3) {
      tokens = enc.encode_ordinary(text).length;
      ++runs;
      elapsed = Number(process.hrtime.bigint() - start) / 1e9;
    }
    const cpu = process.cpuUsage(cpuStart);
    const seconds = elapsed / runs;
    const cpuSeconds = (cpu.user + cpu.system) / 1e6 / runs;  // process CPU time, as the C++ bench measures
    console.log(JSON.stringify({
      bytes, tokens, runs, seconds, mb_per_s: bytes / seconds / 1e6, cpu_mb_per_s: bytes / cpuSeconds / 1e6,
    }));
  } else {
    const input = JSON.parse(readFileSync(arg('--input'), 'utf8'));
    const segments = input.segments.map((s) => Array.from(enc.encode_ordinary(s)));
    const joined = input.segments.join('');
    const whole = Array.from(enc.encode_ordinary(joined));
    const wholeSpecial = Array.from(enc.encode(joined, 'all'));
    writeFileSync(arg('--output'), JSON.stringify({ segments, whole, whole_special: wholeSpecial }));
  }
} finally {
  enc.free();
}
