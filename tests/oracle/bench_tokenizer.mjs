// Hugging Face tokenizers throughput, for bench/tokenizer.c: encodes every document of DOCS_JSONL
// (one JSON string per line) with TOKENIZER_JSON, one call at a time on one thread, and prints one
// JSON object: {"mb_s": best MB/s over the rounds, "ids": total ids, "sum": sum of ids mod 2^32,
// "load_ms": load time}.
//
//   node tests/oracle/bench_tokenizer.mjs TOKENIZER_JSON DOCS_JSONL [ROUNDS=3] [SPECIAL=0]
import { createRequire } from 'module';
import fs from 'fs';

process.env.TOKENIZERS_PARALLELISM = 'false';
process.env.RAYON_NUM_THREADS = '1';
const require = createRequire(import.meta.url);
const { Tokenizer } = require('@anush008/tokenizers');

const [tokPath, docsPath, roundsArg, specialArg] = process.argv.slice(2);
const rounds = Number(roundsArg || 3);
const special = specialArg === '1';
const docs = fs.readFileSync(docsPath, 'utf8').split('\n').filter((l) => l.length).map((l) => JSON.parse(l));
const bytes = docs.reduce((a, d) => a + Buffer.byteLength(d, 'utf8'), 0);

const t0 = process.hrtime.bigint();
const tok = Tokenizer.fromFile(tokPath);
const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;

let best = Infinity;
let count = 0;
let sum = 0;
for (let r = 0; r < rounds; r++) {
  count = 0;
  sum = 0;
  const s = process.hrtime.bigint();
  for (const d of docs) {
    const ids = (await tok.encode(d, null, { addSpecialTokens: special })).getIds();
    count += ids.length;
    for (const id of ids) sum = (sum + id) >>> 0;
  }
  const sec = Number(process.hrtime.bigint() - s) / 1e9;
  if (sec < best) best = sec;
}
console.log(JSON.stringify({ mb_s: bytes / 1e6 / best, ids: count, sum, load_ms: loadMs }));
