/* libFuzzer target for the tokenizer. The first input byte picks what the rest is:
 *   0, 1  text to encode with one of two fixed tokenizers (byte-level BPE with a regex Split,
 *         NFKC and added tokens with every flag; SentencePiece-style BPE with byte fallback,
 *         unk, Metaspace and a Replace/ByteFallback/Fuse/Strip decoder), with and without
 *         special tokens; the ids are decoded and streamed back
 *   2     token ids (little-endian int32, any value) to decode and stream with either tokenizer
 *   3+    a tokenizer.json to load; when it loads, a fixed text is encoded and decoded with it
 * Any input must give OMNIC_OK or an error with a message, never a crash, and the streaming
 * detokenizer's concatenated output must equal the full decode. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tokenizer/detok_stream.h"
#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(omnic_status rc, const omnic_err *err)
{
    if (rc != OMNIC_OK && (err->code != rc || memchr(err->msg, '\0', sizeof err->msg) == NULL || !err->msg[0]))
        __builtin_trap();
}

static const char k_bytelevel[] =
    "{\"added_tokens\": ["
    " {\"id\": 100, \"content\": \"<|im_start|>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 101, \"content\": \"<|im_end|>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 102, \"content\": \"hello\", \"single_word\": true},"
    " {\"id\": 103, \"content\": \" world\", \"lstrip\": true, \"rstrip\": true},"
    " {\"id\": 104, \"content\": \"Ab\", \"normalized\": true}],"
    " \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFKC\"},"
    "   {\"type\": \"Replace\", \"pattern\": {\"Regex\": \"\\\\s{3,}\"}, \"content\": \"  \"}]},"
    " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\":"
    "   \"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+"
    "[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"}, \"behavior\": \"Isolated\", \"invert\": false},"
    "   {\"type\": \"Digits\", \"individual_digits\": true},"
    "   {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]},"
    " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<|im_start|>\"}},"
    "   {\"Sequence\": {\"id\": \"A\"}}, {\"SpecialToken\": {\"id\": \"<|im_end|>\"}}],"
    "   \"special_tokens\": {\"<|im_start|>\": {\"id\": \"<|im_start|>\", \"ids\": [100]},"
    "                      \"<|im_end|>\": {\"id\": \"<|im_end|>\", \"ids\": [101]}}},"
    " \"decoder\": {\"type\": \"ByteLevel\"},"
    " \"model\": {\"type\": \"BPE\", \"ignore_merges\": true, \"vocab\": {%s}, \"merges\": [%s]}}";

static const char k_spm[] =
    "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true},"
    "   {\"id\": 1, \"content\": \"<s>\", \"special\": true}, {\"id\": 2, \"content\": \"</s>\", \"special\": true}],"
    " \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\xe2\x96\x81\"},"
    "   {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\xe2\x96\x81\"}]},"
    " \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\xe2\x96\x81\", \"prepend_scheme\": \"first\","
    "   \"split\": true},"
    " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}},"
    "   {\"Sequence\": {\"id\": \"A\"}}], \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [1]}}},"
    " \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"\xe2\x96\x81\"},"
    "   \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"},"
    "   {\"type\": \"Strip\", \"content\": \" \", \"start\": 1, \"stop\": 0}]},"
    " \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true, \"byte_fallback\": true,"
    "   \"vocab\": {%s}, \"merges\": [%s]}}";

static omnic__tokenizer *g_tok[2];

/* Vocabulary: 3 specials, the byte-level alphabet or <0xNN> tokens, a few letters and merges. */
static omnic__tokenizer *make(int which)
{
    static char vocab[16384], merges[1024], json[24576];
    size_t v = 0;
    int id = 3;
    if (which == 0) {
        for (int b = 0; b < 256; b++) {
            unsigned cp = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE ? (unsigned)b : 0;
            if (!cp) {
                static unsigned next = 0x100;
                cp = next++;
            }
            char u[4];
            int n = cp < 0x80 ? (u[0] = (char)cp, 1) : (u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F)), 2);
            if (cp == '"' || cp == '\\')
                v += (size_t)snprintf(vocab + v, sizeof vocab - v, "\"\\%c\": %d,", (char)cp, b);
            else
                v += (size_t)snprintf(vocab + v, sizeof vocab - v, "\"%.*s\": %d,", n, u, b);
        }
        v += (size_t)snprintf(vocab + v, sizeof vocab - v,
                              "\"he\": 256, \"ll\": 257, \"hell\": 258, \"hello\": 259, \"\xc4\xa0w\": 260, \"or\": 261");
        snprintf(merges, sizeof merges, "\"h e\", \"l l\", \"he ll\", \"hell o\", \"\xc4\xa0 w\", \"o r\"");
        snprintf(json, sizeof json, k_bytelevel, vocab, merges);
    } else {
        v += (size_t)snprintf(vocab + v, sizeof vocab - v, "\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2,");
        for (int b = 0; b < 256; b++) v += (size_t)snprintf(vocab + v, sizeof vocab - v, "\"<0x%02X>\": %d,", b, id++);
        const char *letters[] = {"\xe2\x96\x81", "a", "b", "c", "e", "h", "l", "o", "\xe2\x96\x81h", "he", "ll", "llo",
                                 "\xe2\x96\x81he", "\xe2\x96\x81hello", "\xe4\xb8\xad"};
        for (size_t k = 0; k < sizeof letters / sizeof letters[0]; k++)
            v += (size_t)snprintf(vocab + v, sizeof vocab - v, "%s\"%s\": %d", k ? "," : "", letters[k], id++);
        snprintf(merges, sizeof merges,
                 "\"\xe2\x96\x81 h\", \"h e\", \"l l\", \"ll o\", \"\xe2\x96\x81h e\", \"\xe2\x96\x81he llo\"");
        snprintf(json, sizeof json, k_spm, vocab, merges);
    }
    omnic__tokenizer *t = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    if (omnic__tokenizer_load_buffer(json, strlen(json), NULL, 0, "fuzz", &t, &err) != OMNIC_OK) {
        fprintf(stderr, "fuzz_tokenizer: fixed tokenizer %d does not load: %s\n", which, err.msg);
        __builtin_trap();
    }
    return t;
}

/* Decodes ids both ways and checks the stream against the full decode. */
static void roundtrip(const omnic__tokenizer *t, const int32_t *ids, size_t n)
{
    for (int skip = 0; skip < 2; skip++) {
        omnic_err err;
        omnic_err_clear(&err);
        char *full = NULL;
        size_t flen = 0;
        omnic_status rc = omnic__tokenizer_decode(t, ids, n, skip, &full, &flen, &err);
        check(rc, &err);
        omnic__detok_stream s;
        if (omnic__detok_stream_init(&s, t, skip, &err) != OMNIC_OK) {
            omnic_free(full);
            return;
        }
        char *acc = omnic_malloc(flen + 64);
        size_t alen = 0;
        bool ok = acc != NULL, bad_id = false;
        for (size_t i = 0; i <= n && ok; i++) {
            const char *p;
            size_t len;
            omnic_status st = i < n ? omnic__detok_stream_push(&s, ids[i], &p, &len, &err)
                                    : omnic__detok_stream_flush(&s, &p, &len, &err);
            check(st, &err);
            if (st != OMNIC_OK) {
                bad_id = true;
                continue;
            }
            if (alen + len > flen + 63) {
                if (rc == OMNIC_OK) __builtin_trap(); /* the stream produced more than the decode */
                break;
            }
            memcpy(acc + alen, p, len);
            alen += len;
        }
        if (rc == OMNIC_OK && ok && !bad_id && (alen != flen || memcmp(acc, full, flen) != 0)) __builtin_trap();
        omnic_free(acc);
        omnic__detok_stream_deinit(&s);
        omnic_free(full);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_tok[0]) {
        g_tok[0] = make(0);
        g_tok[1] = make(1);
    }
    if (size < 1) return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    omnic_err err;
    omnic_err_clear(&err);
    if (data[0] < 2) {
        const omnic__tokenizer *t = g_tok[data[0]];
        for (int special = 0; special < 2; special++) {
            int32_t *ids = NULL;
            size_t n = 0;
            omnic_status rc = omnic__tokenizer_encode(t, text, len, special, &ids, &n, &err);
            check(rc, &err);
            if (rc == OMNIC_OK) roundtrip(t, ids, n);
            omnic_free(ids);
        }
        return 0;
    }
    if (data[0] == 2) {
        int32_t ids[256];
        size_t n = len / 4 > 256 ? 256 : len / 4;
        for (size_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)data[1 + 4 * i] | (uint32_t)data[2 + 4 * i] << 8 | (uint32_t)data[3 + 4 * i] << 16 |
                         (uint32_t)data[4 + 4 * i] << 24;
            /* mostly valid ids, sometimes anything */
            ids[i] = (u >> 31) ? (int32_t)u : (int32_t)(u % 300);
        }
        roundtrip(g_tok[len % 2], ids, n);
        return 0;
    }
    omnic__tokenizer *t = NULL;
    omnic_status rc = omnic__tokenizer_load_buffer(text, len, NULL, 0, "fuzz.json", &t, &err);
    check(rc, &err);
    if (rc == OMNIC_OK) {
        static const char sample[] = "Hello, world! <s> 123 \xe4\xb8\xad\xe6\x96\x87 it's  \n\t x\xe2\x96\x81y";
        int32_t *ids = NULL;
        size_t n = 0;
        omnic_status st = omnic__tokenizer_encode(t, sample, sizeof sample - 1, true, &ids, &n, &err);
        check(st, &err);
        if (st == OMNIC_OK) roundtrip(t, ids, n);
        omnic_free(ids);
        omnic__tokenizer_free(t);
    }
    return 0;
}
