// The check list the SDK conformance scripts share (openai_sdk_test.mjs, tiny_model_e2e_sdk.mjs):
// check(name, fn) registers one; runChecks(label) runs them in order, prints "ok   NAME" or "FAIL NAME: …"
// for each and then "PASSED/ALL checks passed (LABEL)", and exits non-zero when any failed.
const checks = [];

export const check = (name, fn) => checks.push({ name, fn });

// Every chunk of a streamed response.
export async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

export async function runChecks(label) {
  let failed = 0;
  for (const { name, fn } of checks) {
    try {
      await fn();
      console.log(`ok   ${name}`);
    } catch (error) {
      failed += 1;
      console.log(`FAIL ${name}: ${error?.stack ?? error}`);
    }
  }
  console.log(`${checks.length - failed}/${checks.length} checks passed (${label})`);
  process.exit(failed ? 1 : 0);
}
