// `omnic serve` driven by the official OpenAI Node client (tests/e2e/test_server.sh runs it).
// usage: node server_client.mjs BASE_URL API_KEY MODEL_ID MAX_N
// Checks: models.list, completions and chat completions (non-stream, stream, usage, stop,
// seed reproducibility, n > 1) and that errors surface as the client's typed exceptions.
import OpenAI from 'openai';

const [base, apiKey, modelId, maxN] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey, maxRetries: 0, timeout: 60000 });
let failures = 0, checks = 0;

function check(cond, what, extra) {
  checks++;
  if (!cond) {
    failures++;
    console.log(`FAIL: ${what}` + (extra !== undefined ? ` (${JSON.stringify(extra)})` : ''));
  }
}

async function expectError(promise, status, what) {
  try {
    await promise;
    check(false, `${what}: expected HTTP ${status}, got success`);
  } catch (e) {
    check(e instanceof OpenAI.APIError && e.status === status, `${what}: HTTP ${status}`, [e.status, e.message]);
    return e;
  }
}

const PROMPT = 'The quick brown fox';

async function completions() {
  const r = await client.completions.create({ model: modelId, prompt: PROMPT, max_tokens: 24, temperature: 0,
                                              ignore_eos: true });
  check(r.object === 'text_completion' && r.id.startsWith('cmpl-'), 'completion object and id', [r.object, r.id]);
  check(r.model === modelId && Number.isInteger(r.created), 'completion model and created');
  check(r.choices.length === 1 && r.choices[0].index === 0 && typeof r.choices[0].text === 'string',
        'completion choices');
  check(r.choices[0].finish_reason === 'length', 'finish_reason length', r.choices[0].finish_reason);
  check(r.usage.completion_tokens === 24 && r.usage.prompt_tokens > 0 &&
        r.usage.total_tokens === r.usage.prompt_tokens + 24, 'completion usage', r.usage);

  // stream + include_usage: same text as the non-streamed greedy answer
  const s = await client.completions.create({ model: modelId, prompt: PROMPT, max_tokens: 24, temperature: 0,
                                              ignore_eos: true, stream: true,
                                              stream_options: { include_usage: true } });
  let text = '', finish = null, usage = null, n = 0;
  for await (const c of s) {
    n++;
    check(c.id.startsWith('cmpl-') && c.object === 'text_completion', 'stream chunk id/object');
    if (c.choices.length) {
      text += c.choices[0].text;
      if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
      check(c.usage === null, 'usage null in content chunks');
    } else {
      usage = c.usage;
    }
  }
  check(text === r.choices[0].text, 'stream text == non-stream text', [text, r.choices[0].text]);
  check(finish === 'length', 'stream finish_reason', finish);
  check(usage && usage.completion_tokens === 24 && usage.prompt_tokens === r.usage.prompt_tokens,
        'stream usage chunk', usage);
  check(n >= 3, 'several chunks', n);

  // stop string: cut where it first appears, finish_reason stop
  const full = r.choices[0].text;
  let stop = null;
  for (let i = 4; i + 3 <= full.length && !stop; i++) {
    const cand = full.slice(i, i + 3);
    if (!cand.includes('\uFFFD') && cand.trim().length === 3) stop = cand;
  }
  if (stop) {
    const st = await client.completions.create({ model: modelId, prompt: PROMPT, max_tokens: 24, temperature: 0,
                                                 ignore_eos: true, stop: [stop, 'zzzzzz'] });
    check(st.choices[0].text === full.slice(0, full.indexOf(stop)), 'stop cuts the text',
          [st.choices[0].text, stop, full]);
    check(st.choices[0].finish_reason === 'stop', 'stop finish_reason', st.choices[0].finish_reason);
  } else {
    check(false, 'no usable stop string in the greedy text', full);
  }

  // seeds: same seed same text, and n > 1 uses seed + j for choice j
  const sampled = (seed, n = 1) => client.completions.create({ model: modelId, prompt: PROMPT, max_tokens: 16,
                                                               temperature: 1.0, top_p: 0.95, seed, n,
                                                               ignore_eos: true });
  const a = await sampled(42), b = await sampled(42), c = await sampled(43);
  check(a.choices[0].text === b.choices[0].text, 'same seed, same text');
  check(a.choices[0].text !== c.choices[0].text, 'different seed, different text');
  const nn = Math.min(3, Number(maxN));
  const m = await sampled(42, nn);
  check(m.choices.length === nn && m.choices.every((ch, i) => ch.index === i), 'n choices with indexes',
        m.choices.length);
  check(m.choices[0].text === a.choices[0].text, 'choice 0 of n uses the seed');
  if (nn > 1) check(m.choices[1].text === c.choices[0].text, 'choice 1 of n uses seed + 1');
  check(m.usage.completion_tokens === 16 * nn && m.usage.prompt_tokens === a.usage.prompt_tokens,
        'usage of n choices: prompt once, completions summed', m.usage);

  // prompt arrays: each prompt gets n choices
  const pa = await client.completions.create({ model: modelId, prompt: [PROMPT, 'Hello'], max_tokens: 5,
                                              temperature: 0, n: 2, ignore_eos: true });
  check(pa.choices.length === 4 && pa.choices[0].text === pa.choices[1].text &&
        pa.choices[0].text === r.choices[0].text.slice(0, pa.choices[0].text.length), 'prompt array x n',
        pa.choices.map((x) => x.text));
}

async function chat() {
  const messages = [{ role: 'developer', content: 'You are terse.' },
                    { role: 'user', content: [{ type: 'text', text: 'Say' }, { type: 'text', text: 'hello' }] }];
  const r = await client.chat.completions.create({ model: modelId, messages, max_tokens: 20, temperature: 0,
                                                   ignore_eos: true });
  check(r.object === 'chat.completion' && r.id.startsWith('chatcmpl-'), 'chat object and id', [r.object, r.id]);
  check(r.choices[0].message.role === 'assistant' && typeof r.choices[0].message.content === 'string',
        'chat message');
  check(r.choices[0].finish_reason === 'length' && r.usage.completion_tokens === 20, 'chat finish and usage',
        r.usage);
  const s = await client.chat.completions.create({ model: modelId, messages, max_tokens: 20, temperature: 0,
                                                   ignore_eos: true, stream: true,
                                                   stream_options: { include_usage: true } });
  let text = '', role = null, finish = null, usage = null;
  for await (const c of s) {
    check(c.object === 'chat.completion.chunk' && c.id.startsWith('chatcmpl-'), 'chat chunk object');
    if (!c.choices.length) {
      usage = c.usage;
      continue;
    }
    const d = c.choices[0].delta;
    if (d.role) role = d.role;
    if (d.content) text += d.content;
    if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
  }
  check(role === 'assistant', 'chat stream role');
  check(text === r.choices[0].message.content, 'chat stream == non-stream', [text, r.choices[0].message.content]);
  check(finish === 'length' && usage && usage.completion_tokens === 20 &&
        usage.prompt_tokens === r.usage.prompt_tokens, 'chat stream finish and usage', usage);
  const nn = Math.min(2, Number(maxN));
  const m = await client.chat.completions.create({ model: modelId, messages, max_completion_tokens: 8,
                                                   temperature: 0.9, seed: 5, n: nn, ignore_eos: true });
  check(m.choices.length === nn, 'chat n choices');
  const one = await client.chat.completions.create({ model: modelId, messages, max_completion_tokens: 8,
                                                     temperature: 0.9, seed: 5, ignore_eos: true });
  check(one.choices[0].message.content === m.choices[0].message.content, 'chat seed reproducible');
}

async function errors() {
  await expectError(client.completions.create({ model: modelId, prompt: 'x', temperature: 7 }), 400,
                    'temperature out of range');
  const e = await expectError(client.chat.completions.create({ model: modelId, messages: [{ role: 'user',
                              content: 'x' }], logprobs: true }), 400, 'logprobs');
  check(e && /not supported/.test(e.message), 'logprobs message', e && e.message);
  await expectError(client.completions.create({ model: 'gpt-4o', prompt: 'x' }), 404, 'unknown model');
  const bad = new OpenAI({ baseURL: base, apiKey: 'wrong-key', maxRetries: 0 });
  const a = await expectError(bad.models.list(), 401, 'wrong API key');
  check(a instanceof OpenAI.AuthenticationError, 'AuthenticationError class');
}

async function main() {
  const models = await client.models.list();
  check(models.data.length === 1 && models.data[0].id === modelId, 'models.list', models.data);
  check(models.data[0].input_modalities.join() === 'text', 'input modalities: text');
  await completions();
  await chat();
  await errors();
  console.log(`openai client: ${checks - failures}/${checks} checks passed`);
  process.exit(failures ? 1 : 0);
}

main().catch((e) => {
  console.log('FAIL: exception', e);
  process.exit(1);
});
