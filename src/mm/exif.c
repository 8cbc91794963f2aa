/* EXIF orientation: a bounds-checked reader of IFD0 in a TIFF-structured EXIF block, Pillow's
 * XMP pattern, and where Pillow finds the block in PNG (chunk walk) and WebP (libwebp demux). */
#include <string.h>

#include <webp/demux.h>
#include <zlib.h>

#include "core/alloc.h"
#include "mm/exif.h"
#include "tokenizer/tok_util.h"

#define TAG_ORIENTATION 0x0112u
/* Pillow's PngImagePlugin.MAX_TEXT_CHUNK (ImageFile.SAFEBLOCK): most a zTXt/iTXt may inflate to,
 * and MAX_TEXT_MEMORY, the text all chunks together may hold before Pillow refuses the file
 * (counted here over the chunks read: this bounds the inflate work a hostile file can cause). */
#define PNG_MAX_TEXT (1u << 20)
#define PNG_MAX_TEXT_TOTAL ((size_t)64 << 20)

/* ---- TIFF / IFD0 -------------------------------------------------------------------------- */

typedef struct tiff {
    const uint8_t *p;
    size_t n;
    bool big_endian;
} tiff;

static uint32_t rd16(const tiff *t, size_t off)
{
    const uint8_t *b = t->p + off;
    return t->big_endian ? (uint32_t)b[0] << 8 | b[1] : (uint32_t)b[1] << 8 | b[0];
}

static uint32_t rd32(const tiff *t, size_t off)
{
    const uint8_t *b = t->p + off;
    return t->big_endian ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
                         : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
}

static uint64_t rd64(const tiff *t, size_t off)
{
    uint64_t a = rd32(t, off), b = rd32(t, off + 4);
    return t->big_endian ? a << 32 | b : b << 32 | a;
}

/* Bytes per value of the TIFF types Pillow loads; 0 for a type it skips. */
static size_t type_size(uint32_t type)
{
    switch (type) {
    case 1:
    case 2:
    case 6:
    case 7:
        return 1; /* BYTE ASCII SBYTE UNDEFINED */
    case 3:
    case 8:
        return 2; /* SHORT SSHORT */
    case 4:
    case 9:
    case 11:
    case 13:
        return 4; /* LONG SLONG FLOAT IFD */
    case 5:
    case 10:
    case 12:
    case 16:
        return 8; /* RATIONAL SRATIONAL DOUBLE LONG8 */
    default:
        return 0;
    }
}

static int from_integer(int64_t v)
{
    return v >= 2 && v <= 8 ? (int)v : 1;
}

static int from_double(double v)
{
    for (int k = 2; k <= 8; k++)
        if (v == (double)k) return k;
    return 1;
}

/* The orientation of the first value at off (in bounds, at least one value of type). Python's
 * dict lookup {2: ..., 8: ...}.get(value): ints compare as ints, floats and Fractions by value;
 * a zero denominator is NaN. Bytes (BYTE, UNDEFINED) and strings (ASCII) never match. */
static int value_orientation(const tiff *t, uint32_t type, size_t off)
{
    switch (type) {
    case 3:
        return from_integer(rd16(t, off));
    case 4:
    case 13:
        return from_integer(rd32(t, off));
    case 16: {
        uint64_t v = rd64(t, off);
        return v <= 8 ? from_integer((int64_t)v) : 1;
    }
    case 6:
        return from_integer((int8_t)t->p[off]);
    case 8:
        return from_integer((int16_t)rd16(t, off));
    case 9:
        return from_integer((int32_t)rd32(t, off));
    case 11: {
        uint32_t bits = rd32(t, off);
        float f;
        memcpy(&f, &bits, sizeof f);
        return from_double((double)f);
    }
    case 12: {
        uint64_t bits = rd64(t, off);
        double d;
        memcpy(&d, &bits, sizeof d);
        return from_double(d);
    }
    case 5:
    case 10: {
        int64_t num = type == 5 ? (int64_t)rd32(t, off) : (int64_t)(int32_t)rd32(t, off);
        int64_t den = type == 5 ? (int64_t)rd32(t, off + 4) : (int64_t)(int32_t)rd32(t, off + 4);
        if (den == 0) return 1;
        for (int64_t k = 2; k <= 8; k++)
            if (num == k * den) return (int)k;
        return 1;
    }
    default:
        return 1;
    }
}

int omnic__exif_orientation(const uint8_t *buf, size_t len, bool *tagged)
{
    if (tagged) *tagged = false;
    if (!buf) return 1;
    if (len >= 6 && !memcmp(buf, "Exif\0\0", 6)) {
        buf += 6;
        len -= 6;
    }
    /* Pillow reads an 8-byte header; fewer bytes, or a magic it does not accept, is no EXIF. */
    if (len < 8) return 1;
    tiff t = {buf, len, false};
    if (!memcmp(buf, "MM\0*", 4) || !memcmp(buf, "MM*\0", 4) || !memcmp(buf, "MM\0+", 4))
        t.big_endian = true;
    else if (!memcmp(buf, "II*\0", 4) || !memcmp(buf, "II\0*", 4))
        t.big_endian = false;
    else
        return 1;

    size_t ifd = rd32(&t, 4);
    if (ifd > len || len - ifd < 2) return 1;
    uint32_t count = rd16(&t, ifd);
    bool found = false;
    uint32_t found_type = 0;
    size_t found_off = 0;
    size_t entry = ifd + 2;
    for (uint32_t i = 0; i < count; i++, entry += 12) {
        if (entry > len || len - entry < 12) break; /* table truncated: the entries read so far count */
        uint32_t tag = rd16(&t, entry), type = rd16(&t, entry + 2), n = rd32(&t, entry + 4);
        size_t unit = type_size(type);
        if (unit == 0) continue;
        uint64_t size = (uint64_t)n * unit; /* <= (2^32 - 1) * 8: no overflow */
        size_t off = entry + 8;
        if (size > 4) {
            uint64_t at = rd32(&t, entry + 8);
            if (at > len || size > len - at) break; /* Pillow's read fails: it stops the IFD here */
            off = (size_t)at;
        }
        if (size == 0) continue;
        if (tag == TAG_ORIENTATION) {
            found = true;
            found_type = type;
            found_off = off;
        }
    }
    if (!found) return 1;
    if (tagged) *tagged = true;
    return value_orientation(&t, found_type, found_off);
}

/* ---- XMP ---------------------------------------------------------------------------------- */

int omnic__xmp_orientation(const uint8_t *xmp, size_t len)
{
    static const char key[] = "tiff:Orientation";
    const size_t klen = sizeof key - 1;
    if (!xmp) return -1;
    for (size_t i = 0; i + klen < len; i++) {
        if (memcmp(xmp + i, key, klen) != 0) continue;
        size_t j = i + klen;
        if (xmp[j] == '=' && j + 2 < len && xmp[j + 1] == '"')
            j += 2;
        else if (xmp[j] == '>' && j + 1 < len)
            j += 1;
        else
            continue;
        if (xmp[j] >= '0' && xmp[j] <= '9') return xmp[j] - '0';
    }
    return -1;
}

/* ---- PNG ---------------------------------------------------------------------------------- */

/* One value of Pillow's PNG info dict that orientation depends on: borrowed from the file, or
 * owned (inflated text, decoded hex). */
typedef struct png_value {
    bool set;
    bool usable;      /* false: a value Pillow's getexif raises on (then: no orientation) */
    const uint8_t *p; /* [n] bytes */
    size_t n;
    uint8_t *owned; /* p when owned, else NULL */
} png_value;

static void value_clear(png_value *v)
{
    omnic_free(v->owned);
    memset(v, 0, sizeof *v);
}

static void value_set(png_value *v, const uint8_t *p, size_t n, uint8_t *owned, bool usable)
{
    value_clear(v);
    v->set = true;
    v->usable = usable;
    v->p = p;
    v->n = n;
    v->owned = owned;
}

typedef struct png_meta {
    png_value exif;    /* info["exif"]: EXIF bytes */
    png_value raw;     /* info["Raw profile type exif"]: text */
    png_value xmp;     /* info["XML:com.adobe.xmp"]: text */
    size_t text_total; /* bytes of text values read, against PNG_MAX_TEXT_TOTAL */
    bool refused;      /* Pillow raises on this file (too much text, a bad zTXt): no orientation */
} png_meta;

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool is_word(uint8_t c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* zlib.decompressobj().decompress(data, 1 MiB) as Pillow's _safe_zlib_decompress: *out owned
 * (NULL when empty). Returns 1 on success (a truncated stream gives what it inflated), 0 for a
 * zlib error (Pillow: empty text / skipped iTXt), -1 over the limit (Pillow raises), -2 NOMEM. */
static int inflate_text(const uint8_t *in, size_t n, uint8_t **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    uint8_t *buf = omnic_alloc_array(PNG_MAX_TEXT, 1);
    if (!buf) return -2;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit(&z) != Z_OK) {
        omnic_free(buf);
        return -2;
    }
    z.next_in = (Bytef *)(uintptr_t)in; /* zlib's API is not const; it does not write */
    z.avail_in = n > UINT32_MAX ? UINT32_MAX : (uInt)n;
    z.next_out = buf;
    z.avail_out = PNG_MAX_TEXT;
    int rc = inflate(&z, Z_FINISH);
    size_t produced = PNG_MAX_TEXT - z.avail_out;
    bool tail = rc != Z_STREAM_END && z.avail_out == 0 && z.avail_in > 0;
    inflateEnd(&z);
    if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_STREAM_ERROR || rc == Z_MEM_ERROR) {
        omnic_free(buf);
        return rc == Z_MEM_ERROR ? -2 : 0;
    }
    if (tail) {
        omnic_free(buf);
        return -1;
    }
    if (produced == 0) {
        omnic_free(buf);
        return 1;
    }
    *out = buf;
    *out_n = produced;
    return 1;
}

static png_value *meta_slot(png_meta *m, const uint8_t *key, size_t klen)
{
    if (klen == 4 && !memcmp(key, "exif", 4)) return &m->exif;
    if (klen == 21 && !memcmp(key, "Raw profile type exif", 21)) return &m->raw;
    if (klen == 17 && !memcmp(key, "XML:com.adobe.xmp", 17)) return &m->xmp;
    return NULL;
}

static bool utf8_ok(const uint8_t *p, size_t n)
{
    return omnic__utf8_validate((const char *)p, n) == n;
}

/* One text chunk (tEXt, zTXt or iTXt) of d[0..n) into m, as Pillow's chunk_tEXt / zTXt / iTXt. */
static omnic_status png_text(png_meta *m, const uint8_t *type, const uint8_t *d, size_t n, omnic_err *err)
{
    const uint8_t *nul = memchr(d, 0, n);
    size_t klen = nul ? (size_t)(nul - d) : n;
    const uint8_t *v = nul ? nul + 1 : d + n;
    size_t vn = (size_t)(d + n - v);
    if (!memcmp(type, "zTXt", 4) && vn > 0 && v[0] != 0) { /* unknown method: Pillow raises, any key */
        m->refused = true;
        return OMNIC_OK;
    }
    png_value *slot = meta_slot(m, d, klen);
    if (!slot) return OMNIC_OK;
    bool is_exif = slot == &m->exif;
    if (!memcmp(type, "tEXt", 4)) {
        /* Raw bytes under "exif" (Pillow keeps bytes for that key), latin-1 text otherwise. */
        m->text_total += vn;
        value_set(slot, v, vn, NULL, true);
        return OMNIC_OK;
    }
    bool compressed;
    if (!memcmp(type, "zTXt", 4)) {
        compressed = true;
        if (vn > 0) {
            v++;
            vn--;
        }
    } else { /* iTXt: flag, method, language\0, translated keyword\0, text */
        if (!nul || vn < 2) return OMNIC_OK;
        uint8_t flag = v[0], method = v[1];
        const uint8_t *r = v + 2;
        size_t rn = vn - 2;
        const uint8_t *z1 = memchr(r, 0, rn);
        if (!z1) return OMNIC_OK;
        const uint8_t *z2 = memchr(z1 + 1, 0, (size_t)(r + rn - (z1 + 1)));
        if (!z2) return OMNIC_OK;
        if (!utf8_ok(r, (size_t)(z1 - r)) || !utf8_ok(z1 + 1, (size_t)(z2 - z1 - 1))) return OMNIC_OK;
        if (flag != 0 && method != 0) return OMNIC_OK;
        compressed = flag != 0;
        v = z2 + 1;
        vn = (size_t)(r + rn - v);
    }
    uint8_t *text = NULL;
    size_t tn = vn;
    if (compressed) {
        int rc = inflate_text(v, vn, &text, &tn);
        if (rc == -2) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "PNG: out of memory for a text chunk");
        if (rc == -1) { /* over 1 MiB: Pillow raises */
            m->refused = true;
            return OMNIC_OK;
        }
        if (rc == 0) {
            if (memcmp(type, "iTXt", 4) == 0) return OMNIC_OK; /* Pillow skips the chunk */
            tn = 0;                                            /* zTXt: Pillow stores "" */
        }
        v = text;
    }
    if (!memcmp(type, "iTXt", 4) && !utf8_ok(v, tn)) {
        omnic_free(text);
        return OMNIC_OK;
    }
    /* zTXt / iTXt store a str; a non-empty str under "exif" makes Pillow's Exif.load raise. */
    m->text_total += tn;
    value_set(slot, v, tn, text, !is_exif || tn == 0);
    return OMNIC_OK;
}

static bool hex_digit(uint8_t c, uint8_t *v)
{
    if (c >= '0' && c <= '9')
        *v = (uint8_t)(c - '0');
    else if (c >= 'a' && c <= 'f')
        *v = (uint8_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
        *v = (uint8_t)(c - 'A' + 10);
    else
        return false;
    return true;
}

static bool py_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* bytes.fromhex("".join(text.split("\n")[3:])): *out owned (NULL when empty). Returns 1, 0 when
 * Python raises (a non-hex character, an odd digit count), -2 NOMEM. */
static int raw_profile_bytes(const uint8_t *p, size_t n, uint8_t **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    size_t i = 0;
    for (int lines = 0; lines < 3; lines++) {
        const uint8_t *nl = memchr(p + i, '\n', n - i);
        if (!nl) return 1; /* fewer than four lines: "" */
        i = (size_t)(nl - p) + 1;
    }
    uint8_t *buf = omnic_alloc_array(n - i + 1, 1);
    if (!buf) return -2;
    size_t k = 0;
    bool have_hi = false;
    uint8_t hi = 0;
    for (; i < n; i++) {
        uint8_t c = p[i], d;
        if (c == '\n') continue; /* removed by the split / join */
        if (!have_hi && py_space(c)) continue;
        if (!hex_digit(c, &d)) {
            omnic_free(buf);
            return 0;
        }
        if (have_hi)
            buf[k++] = (uint8_t)(hi << 4 | d);
        else
            hi = d;
        have_hi = !have_hi;
    }
    if (have_hi || k == 0) {
        omnic_free(buf);
        return have_hi ? 0 : 1;
    }
    *out = buf;
    *out_n = k;
    return 1;
}

static omnic_status png_meta_read(png_meta *m, const uint8_t *buf, size_t len, omnic_err *err)
{
    size_t pos = 8; /* after the signature */
    bool after_idat = false, animated = false;
    while (pos <= len && len - pos >= 12 && !m->refused) {
        uint32_t n = be32(buf + pos);
        const uint8_t *type = buf + pos + 4;
        if (!is_word(type[0]) || !is_word(type[1]) || !is_word(type[2]) || !is_word(type[3])) break;
        if (n > len - pos - 12) break; /* truncated chunk: Pillow's read fails */
        const uint8_t *d = buf + pos + 8;
        pos += 12 + (size_t)n;
        if (!memcmp(type, "IDAT", 4) || !memcmp(type, "fdAT", 4)) {
            /* Pillow's getexif reads past the image data only when no "exif" entry exists yet. */
            if (!after_idat && m->exif.set) break;
            after_idat = true;
            continue;
        }
        if (!memcmp(type, "IEND", 4)) break;
        if (after_idat && animated && !memcmp(type, "fcTL", 4)) break; /* the next APNG frame */
        if (!memcmp(type, "acTL", 4) && n >= 4) animated = be32(d) > 1;
        if (!memcmp(type, "eXIf", 4)) {
            /* Pillow stores "Exif\0\0" + data and strips that prefix again: the data is read as
             * TIFF, so data that itself starts with the prefix is no TIFF header (Pillow raises). */
            value_set(&m->exif, d, n, NULL, !(n >= 6 && !memcmp(d, "Exif\0\0", 6)));
        } else if (!memcmp(type, "tEXt", 4) || !memcmp(type, "zTXt", 4) || !memcmp(type, "iTXt", 4)) {
            OMNIC_TRY(png_text(m, type, d, n, err));
            if (m->text_total > PNG_MAX_TEXT_TOTAL) m->refused = true;
        }
    }
    return OMNIC_OK;
}

omnic_status omnic__exif_orientation_png(const uint8_t *buf, size_t len, int *orientation, omnic_err *err)
{
    *orientation = 1;
    if (!buf || len < 8) return OMNIC_OK;
    png_meta m;
    memset(&m, 0, sizeof m);
    omnic_status rc = png_meta_read(&m, buf, len, err);
    bool tagged = false, usable = true;
    if (rc == OMNIC_OK) {
        if (m.refused) {
            usable = false;
        } else if (m.exif.set) {
            usable = m.exif.usable;
            if (usable) *orientation = omnic__exif_orientation(m.exif.p, m.exif.n, &tagged);
        } else if (m.raw.set) {
            uint8_t *bytes = NULL;
            size_t nb = 0;
            int r = raw_profile_bytes(m.raw.p, m.raw.n, &bytes, &nb);
            if (r == -2) rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "PNG: out of memory for the EXIF profile");
            usable = r == 1;
            if (r == 1) *orientation = omnic__exif_orientation(bytes, nb, &tagged);
            omnic_free(bytes);
        }
        if (rc == OMNIC_OK && usable && !tagged && m.xmp.set) {
            int x = omnic__xmp_orientation(m.xmp.p, m.xmp.n);
            *orientation = x >= 2 && x <= 8 ? x : 1;
        }
    }
    value_clear(&m.exif);
    value_clear(&m.raw);
    value_clear(&m.xmp);
    if (rc != OMNIC_OK) *orientation = 1;
    return rc;
}

/* ---- WebP --------------------------------------------------------------------------------- */

int omnic__exif_orientation_webp(const uint8_t *buf, size_t len)
{
    if (!buf || len == 0) return 1;
    WebPData data = {buf, len};
    WebPDemuxer *dmux = WebPDemux(&data);
    if (!dmux) return 1;
    int orientation = 1;
    WebPChunkIterator it;
    if (WebPDemuxGetChunk(dmux, "EXIF", 1, &it)) {
        orientation = omnic__exif_orientation(it.chunk.bytes, it.chunk.size, NULL);
        WebPDemuxReleaseChunkIterator(&it);
    }
    WebPDemuxDelete(dmux);
    return orientation;
}
