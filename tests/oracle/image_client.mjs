// Image input through `omnic serve` with the official OpenAI Node client
// (tests/e2e/test_server_images.sh runs it).
// usage: node image_client.mjs BASE_URL API_KEY MODEL_ID IMAGE.jpg EXPECTED_TEXT
// Checks: a chat completion with an image_url data: URL (non-stream and stream) gives the text
// curl got for the same image by file path; a bad image surfaces as the client's 400 error.
import fs from 'node:fs';
import OpenAI from 'openai';

const [base, apiKey, modelId, imagePath, expected] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey, maxRetries: 0, timeout: 60000 });
let failures = 0, checks = 0;
function check(cond, what, extra) {
  checks++;
  if (!cond) {
    failures++;
    console.log(`FAIL: ${what}` + (extra !== undefined ? ` (${JSON.stringify(extra)})` : ''));
  }
}

const url = 'data:image/jpeg;base64,' + fs.readFileSync(imagePath).toString('base64');
const messages = [{ role: 'user', content: [{ type: 'image_url', image_url: { url } },
                                            { type: 'text', text: 'Describe the image.' }] }];
const r = await client.chat.completions.create({ model: modelId, messages, max_tokens: 12, temperature: 0 });
check(r.object === 'chat.completion' && r.choices[0].message.content === expected, 'image chat == curl',
      [r.choices[0].message.content, expected]);
check(r.usage.completion_tokens === 12 && r.usage.prompt_tokens > 0, 'image chat usage', r.usage);
const s = await client.chat.completions.create({ model: modelId, messages, max_tokens: 12, temperature: 0,
                                                stream: true, stream_options: { include_usage: true } });
let text = '', usage = null;
for await (const chunk of s) {
  if (chunk.choices.length) text += chunk.choices[0].delta.content || '';
  if (chunk.usage) usage = chunk.usage;
}
check(text === expected && usage && usage.completion_tokens === 12, 'streamed image chat == curl', [text, usage]);
try {
  await client.chat.completions.create({ model: modelId, max_tokens: 4, messages: [{ role: 'user', content: [
    { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }] });
  check(false, 'truncated PNG: expected a 400');
} catch (e) {
  check(e instanceof OpenAI.APIError && e.status === 400 && /PNG/.test(e.message), 'truncated PNG: 400', e.message);
}
console.log(`image_client: ${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
