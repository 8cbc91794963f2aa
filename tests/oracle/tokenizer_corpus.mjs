// Deterministic tokenizer test corpus: hand-written strings that poke at each part of a
// tokenizer (scripts, emoji, combining marks, normalization, whitespace, code, digits, special
// tokens inline, very long words) plus generated mixtures of them. Same output on every run.
//
//   node tests/oracle/tokenizer_corpus.mjs > corpus.jsonl      (one JSON string per line)
//   import { corpus } from './tokenizer_corpus.mjs'
//
// Only characters from Unicode 13 or earlier are used, so omnic's Unicode tables (utf8proc,
// PCRE2) and the oracle's agree on every property.

function rng(seed) {
  // mulberry32
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIXED = [
  '',
  ' ',
  '  ',
  '\n',
  '\n\n\n',
  '\t',
  '\r\n',
  'a',
  'Hello world',
  'Hello, world!',
  ' Hello world',
  'Hello world ',
  '  leading and trailing  ',
  'The quick brown fox jumps over the lazy dog.',
  "I'm sure you're right, they've said we'll see, he'd know, it's Bob's.",
  "I'M SURE YOU'RE RIGHT, THEY'VE SAID WE'LL SEE, HE'D KNOW, IT'S BOB'S.",
  "don't DON'T Don'T 's 'S 't 're 've 'm 'll 'd",
  'rock’n’roll ‘quoted’ “double” „German“ «French» ‹single›',
  'Straße, Grüße, Äpfel, Öl, Übermut; ß vs SS',
  'Élève, garçon, naïve, cœur, déjà vu, à la carte',
  'Mañana, niño, ¿Qué tal? ¡Hola!',
  'Привет, мир! Съешь же ещё этих мягких французских булок.',
  'Ελληνικά: Σίσυφος, ΟΔΥΣΣΕΥΣ, λόγος',
  'İstanbul ıi İI Diyarbakır',
  '中文分词测试：我爱北京天安门。',
  '日本語のテキスト、ひらがなとカタカナと漢字。',
  '한국어 텍스트입니다. 안녕하세요!',
  'مرحبا بالعالم! هذا نص عربي مع تشكيل: كَتَبَ',
  'שלום עולם, זה טקסט בעברית',
  'नमस्ते दुनिया, यह हिन्दी पाठ है। क्षत्रिय',
  'বাংলা লেখা পরীক্ষা',
  'தமிழ் உரை சோதனை',
  'สวัสดีครับ นี่คือข้อความภาษาไทยที่ไม่มีช่องว่าง',
  'Tiếng Việt có nhiều dấu: người, được, những',
  'ქართული ენა',
  'Հայերեն լեզու',
  'አማርኛ ቋንቋ',
  'emoji 👍 👍🏽 👨‍👩‍👧‍👦 🇺🇸 🇯🇵 1️⃣ ❤️ 🏳️‍🌈 🧑‍💻',
  '😀😃😄😁😆😅😂🤣☺️😊',
  'e\u0301 vs \u00e9, A\u030a vs \u00c5 vs \u212b',
  'o\u0308\u0304 stacked a\u0323\u0302 marks',
  'ﬁ ﬂ ﬃ ligatures, ＡＢＣ１２３ fullwidth, ① ② ③, ㎏ ㎞, ½ ¾, x² y³, ™ ℃',
  '\u1100\u1161\u11a8 conjoining jamo vs \uac01',
  'Ⅻ roman numeral, ℌ ℍ ℑ letterlike',
  'NBSP:\u00a0here, NEL:\u0085here, LS:\u2028PS:\u2029, IDSP:\u3000, ZWSP:\u200bx, BOM:\ufeffx',
  'tabs\tand\t\ttabs\t\t\tend',
  'line1\nline2\r\nline3\rline4\n\n\nline7',
  'spaces     in     between',
  'trailing newline\n',
  '\n leading newline',
  '    indented code',
  'def f(x):\n    return x ** 2  # square\n',
  'int main(void) {\n\tprintf("%d\\n", 42);\n\treturn 0;\n}\n',
  'for (int i = 0; i < n; ++i) { a[i] += b[i] * c; }',
  '{"key": "value", "list": [1, 2, 3], "nested": {"a": null, "b": true}}',
  '<div class="x"><p>Hello &amp; goodbye</p></div>',
  '$ ls -la /usr/bin | grep -E "^-.*x" > out.txt 2>&1',
  'SELECT id, name FROM users WHERE age >= 18 ORDER BY name;',
  'https://example.com/path?query=1&b=2#frag and mail@example.org',
  '# Title\n\n- item one\n- item two\n\n```python\nprint("hi")\n```\n',
  '1234567890',
  '3.14159265358979323846',
  '1,000,000 and 1.000.000 and 1 000 000',
  '2024-01-15T10:30:00Z',
  '+1 (555) 123-4567',
  '٠١٢٣٤٥٦٧٨٩ Arabic-Indic digits, ०१२३ Devanagari digits',
  'x = 10^6; y = 2e-5; z = 0xFF; w = 0b1010',
  '∀x ∈ ℝ: x² ≥ 0 ∧ ∑ᵢ aᵢ = ∫ f(t) dt',
  '!!!???...,,,;;;:::',
  '---===+++***///\\\\\\|||',
  '(((nested))) [[[brackets]]] {{{braces}}}',
  '@user #hashtag $money %percent ^caret &amp *star',
  '▁ literal lower one eighth block ▁▁ and Ġ Ċ ĉ',
  'supercalifragilisticexpialidocious',
  'Pneumonoultramicroscopicsilicovolcanoconiosis',
  'a'.repeat(300),
  'ab'.repeat(250),
  'xyz '.repeat(100),
  '🙂'.repeat(50),
  '中'.repeat(200),
  ' '.repeat(64),
  '\n'.repeat(40),
  '\t'.repeat(20),
  '9'.repeat(120),
  '.'.repeat(90),
  'word' + '-'.repeat(40) + 'word',
  '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n',
  '<|endoftext|>',
  '<|endoftext|><|endoftext|>',
  'text<|endoftext|>more text',
  ' <|im_start|> spaced <|im_end|> ',
  '<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n',
  '<bos>',
  '<eos> <pad> <unk> <mask>',
  '<s>[INST] What is 2+2? [/INST]</s>',
  '<s> </s> <unk>',
  '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>',
  '<｜begin▁of▁sentence｜>Hello<｜end▁of▁sentence｜>',
  '<｜User｜>question<｜Assistant｜>answer',
  '<unused0> <unused1><unused99>',
  '[multimodal] <start_of_image> <end_of_image>',
  '<|im_start|',
  '<|im_start',
  '<<|im_start|>>',
  '<|<|im_end|>|>',
  '\u0000 NUL and \u0001 SOH and \u007f DEL',
  '\u000b vertical tab \u000c form feed',
  'Mixed: Hello 世界 мир 🌍 عالم!',
  'CamelCaseIdentifier snake_case_name kebab-case-name SCREAMING_CASE',
  'HTTPServerError XMLHttpRequest iPhone eBay McDonald',
  "l'homme d'affaires aujourd'hui",
  'a\u0300\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308\u0309',
  'Zalgo: Z\u0351\u036b\u0343a\u0360l\u0325g\u0354o',
  'kelvin K \u212a and long s \u017f and ſt ligature \ufb05',
  "it\u017fs 'ſ 'K 'k",
  'ǅ ǈ ǋ titlecase digraphs, ŉ, ΐ',
  'Ω ohm \u2126 vs \u03a9',
  // added-token flags (lstrip, rstrip, single_word, normalized) of the synthetic tokenizers
  'say hello world, sayhello helloworld hello_world hello, <X>  x  <X>Foo foo FOO',
  '  <X>  ', 'a<X>b', ' hello ', 'hello', 'Hello HELLO héllo', '<X><X> <X>\n<X>',
  'the-final--countdown', 'a.b,c;;d!!e', 'price: $1,234.56 (approx.)', 'x1y22z333',
];

const WORDS = {
  en: ['the', 'model', 'token', 'people', 'running', 'quickly', 'understand', 'information', 'a', 'is',
       'Hello', 'World', 'OpenAI', 'transformer', 'attention', "can't", "won't", "it's", 'data', 'GPU'],
  de: ['Straße', 'Grüße', 'über', 'Mädchen', 'schön', 'Fußball', 'Größe'],
  fr: ['élève', 'français', 'garçon', 'où', 'déjà', 'cœur', 'Noël'],
  ru: ['привет', 'мир', 'язык', 'модель', 'ЁЖИК', 'объём'],
  el: ['λόγος', 'Σίσυφος', 'αγάπη', 'ΕΛΛΑΔΑ'],
  zh: ['你好', '世界', '模型', '语言', '北京', '计算机', '人工智能'],
  ja: ['こんにちは', 'カタカナ', '日本語', 'ありがとう', '東京'],
  ko: ['안녕하세요', '한국어', '모델', '서울'],
  ar: ['مرحبا', 'العالم', 'كتاب', 'لغة', 'مُحَمَّد'],
  he: ['שלום', 'עולם', 'ספר'],
  hi: ['नमस्ते', 'दुनिया', 'भाषा', 'हिन्दी', 'क्षत्रिय'],
  th: ['สวัสดี', 'ภาษาไทย', 'ขอบคุณ', 'ประเทศ'],
  vi: ['người', 'được', 'những', 'Việt'],
  code: ['def', 'return', 'int', 'void', 'self', '__init__', 'x_1', 'foo.bar', 'a->b', '::', '=>', '!=',
         '<=', '&&', '||', '0x1F', '#include', 'std::vector<int>', 'i++', '/* c */', '// x'],
  emoji: ['👍', '👍🏽', '👨‍👩‍👧‍👦', '🇺🇸', '1️⃣', '❤️', '🏳️‍🌈', '🧑‍💻', '😂', '🌍', '✨', '🔥'],
  marks: ['e\u0301', 'a\u0308', 'n\u0303', 'o\u0302\u0323', '\u212b', 'ﬁ', 'Ａ', '①', '½', '㎏'],
  digits: ['0', '7', '42', '123', '2024', '3.14', '1e10', '99999', '٣', '१२'],
  punct: ['.', ',', '!', '?', ';', ':', '...', '—', '–', '-', '(', ')', '"', "'", '«', '»', '¿', '¡', '。', '、'],
};
const SPECIALS = ['<|im_start|>', '<|im_end|>', '<|endoftext|>', '<bos>', '<eos>', '<s>', '</s>', '<unk>',
                  '<pad>', '<|begin_of_text|>', '<|eot_id|>', '<start_of_turn>', '<end_of_turn>',
                  '<｜begin▁of▁sentence｜>', '<｜User｜>', '<unused5>', '<mask>', '[multimodal]'];
const SPACES = [' ', ' ', ' ', ' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', ' \n', '\u00a0', '\u3000', ''];

function generated(n, seed) {
  const r = rng(seed);
  const pick = (a) => a[Math.floor(r() * a.length)];
  const langs = Object.keys(WORDS);
  const out = [];
  for (let i = 0; i < n; i++) {
    const kind = i % 10;
    const len = 1 + Math.floor(r() * (kind === 9 ? 60 : 14));
    let s = '';
    const main = pick(langs);
    for (let k = 0; k < len; k++) {
      const lang = r() < 0.7 ? main : pick(langs);
      let w = pick(WORDS[lang]);
      if (r() < 0.1) w = w.toUpperCase();
      if (r() < 0.05) w = w.repeat(2 + Math.floor(r() * 4));
      s += w;
      if (r() < 0.15) s += pick(WORDS.punct);
      if (kind === 3 && r() < 0.3) s += pick(SPECIALS);
      if (kind === 5 && r() < 0.2) s += pick(WORDS.emoji);
      s += pick(SPACES);
    }
    if (kind === 7) s = ' '.repeat(Math.floor(r() * 5)) + s + '\n'.repeat(Math.floor(r() * 3));
    if (kind === 8) s = pick(SPECIALS) + s + pick(SPECIALS);
    if (kind === 2 && r() < 0.5) s = s.trim();
    if (kind === 4) {
      // a long "word" of random letters and digits
      const alpha = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_äöüéñ中文';
      const m = 50 + Math.floor(r() * 1500);
      let w = '';
      for (let k = 0; k < m; k++) w += alpha[Math.floor(r() * alpha.length)];
      s = pick(['', ' ', 'x ']) + w + pick(['', ' ', '.']);
    }
    out.push(s);
  }
  return out;
}

export function corpus() {
  return FIXED.concat(generated(1000, 20240601));
}

import { pathToFileURL } from 'url';
if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const out = corpus().map((s) => JSON.stringify(s)).join('\n') + '\n';
  process.stdout.write(out);
}
