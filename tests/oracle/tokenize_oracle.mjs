// Hugging Face tokenizers (Rust, through the @anush008/tokenizers binding) as the oracle for
// omnic's tokenizer. For one tokenizer.json and a corpus (one JSON string per line) it writes
// OUT_PREFIX.expect.jsonl, one object per line:
//   {"plain": ids without special tokens, "special": ids with special tokens,
//    "dec": decode(special, skip_special_tokens=false), "dec_skip": decode(special, true)}
// followed by `extra` lines of random id sequences (valid ids, many byte-fallback and special
// tokens among them) that test decoding alone: {"ids": [...], "dec": ..., "dec_skip": ...}.
// It also writes OUT_PREFIX.random_ids.jsonl with those id sequences.
//
//   node tests/oracle/tokenize_oracle.mjs TOKENIZER_JSON CORPUS_JSONL OUT_PREFIX [EXTRA=200]
import { createRequire } from 'module';
import fs from 'fs';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('@anush008/tokenizers');

const [tokPath, corpusPath, outPrefix, extraArg] = process.argv.slice(2);
if (!tokPath || !corpusPath || !outPrefix) {
  console.error('usage: node tokenize_oracle.mjs TOKENIZER_JSON CORPUS_JSONL OUT_PREFIX [EXTRA]');
  process.exit(2);
}
const extra = extraArg === undefined ? 200 : Number(extraArg);
const tok = Tokenizer.fromFile(tokPath);
const texts = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l.length).map((l) => JSON.parse(l));

const lines = [];
for (const text of texts) {
  const plain = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
  const special = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
  const dec = await tok.decode(special, false);
  const decSkip = await tok.decode(special, true);
  lines.push(JSON.stringify({ plain, special, dec, dec_skip: decSkip }));
}

// Random id sequences: deterministic (mulberry32), biased towards the interesting ids.
let a = 12345;
const r = () => {
  a = (a + 0x6d2b79f5) >>> 0;
  let t = a;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const size = tok.getVocabSize(true);
const valid = (id) => tok.idToToken(id) !== null;
const byteIds = [];
for (let b = 0; b < 256; b++) {
  const id = tok.tokenToId('<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>');
  if (id !== null && id !== undefined) byteIds.push(id);
}
const vocab = tok.getVocab(true);
const specialish = Object.entries(vocab).filter(([k]) => /^<.*>$|^\[.*\]$/.test(k)).map(([, v]) => v);
const randomIds = [];
for (let i = 0; i < extra; i++) {
  const n = 1 + Math.floor(r() * 24);
  const ids = [];
  while (ids.length < n) {
    const p = r();
    let id;
    if (p < 0.25 && byteIds.length) id = byteIds[Math.floor(r() * byteIds.length)];
    else if (p < 0.35 && specialish.length) id = specialish[Math.floor(r() * specialish.length)];
    else if (p < 0.55) id = Math.floor(r() * Math.min(size, 1000));
    else id = Math.floor(r() * size);
    if (valid(id)) ids.push(id);
  }
  randomIds.push(ids);
  const dec = await tok.decode(ids, false);
  const decSkip = await tok.decode(ids, true);
  lines.push(JSON.stringify({ ids, dec, dec_skip: decSkip }));
}
fs.writeFileSync(outPrefix + '.expect.jsonl', lines.join('\n') + '\n');
fs.writeFileSync(outPrefix + '.random_ids.jsonl', randomIds.map((x) => JSON.stringify(x)).join('\n') + '\n');
