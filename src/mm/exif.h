/* EXIF orientation, read where and how Pillow (9.4, the Hugging Face oracle's) finds it for
 * ImageOps.exif_transpose, which transformers' load_image applies before convert("RGB").
 * Every reader borrows its bytes and is bounds-checked: hostile input gives "no orientation"
 * (1), never a read outside the buffer. Orientation values are EXIF's: 1 = as stored, 2..8 =
 * the seven flips / rotations / transposes (mm/image.h omnic__image_transpose). See
 * docs/multimodal.md "Image loading (EXIF orientation, alpha)". */
#ifndef OMNIC_MM_EXIF_H
#define OMNIC_MM_EXIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* IFD0's Orientation tag (0x0112) of an EXIF block: an optional "Exif\0\0" prefix, then a TIFF
 * header ("II*\0", "MM\0*", or the swapped "II\0*" / "MM*\0" Pillow also accepts; "MM\0+" reads
 * as classic big-endian TIFF as in Pillow; "II+\0" BigTIFF is refused), IFD0 at the header's
 * offset. Only IFD0 is read (no next-IFD or sub-IFD chain is followed, so no loop is possible).
 * As Pillow: entries are read in order until the table or an out-of-line value runs past the end
 * (the entries before it count); entries of an unknown type or with count 0 are skipped; the last
 * Orientation entry wins; its first value counts; SHORT, LONG, SBYTE, SSHORT, SLONG, IFD and LONG8
 * integers, FLOAT / DOUBLE and (S)RATIONAL values equal to an integer 2..8 give that orientation;
 * BYTE, ASCII and UNDEFINED values and every other number give 1.
 * Returns 1..8. *tagged (may be NULL): IFD0 holds an Orientation entry Pillow keeps, whatever
 * its value (then Pillow does not consult XMP). */
int omnic__exif_orientation(const uint8_t *buf, size_t len, bool *tagged);

/* The digit D of the first `tiff:Orientation="D` or `tiff:Orientation>D` (D one ASCII digit) in
 * an XMP packet (Pillow's regex), or -1 when there is none. */
int omnic__xmp_orientation(const uint8_t *xmp, size_t len);

/* Orientation of a PNG file (borrows buf, the whole file) as Pillow's PngImagePlugin + getexif
 * see it: the "exif" entry of the image info (an eXIf chunk; or a tEXt chunk keyed "exif"), else
 * the ImageMagick "Raw profile type exif" text (tEXt, zTXt or iTXt; hex after three header
 * lines), and when neither holds an Orientation tag, the XMP text "XML:com.adobe.xmp" (tEXt,
 * zTXt, iTXt). Chunks are read up to the first IDAT, and when no "exif" entry was found by then,
 * also after the image data, the later chunk of the same key replacing the earlier. Compressed
 * text is inflated up to Pillow's 1 MiB. As Pillow: an iTXt with bad compression or bad UTF-8 is
 * skipped, a zTXt with bad compression holds ""; where Pillow raises (a zTXt method other than 0,
 * text over 1 MiB, over 64 MiB of text in all) the result is 1. Malformed framing ends the walk.
 * *orientation gets 1..8. E_NOMEM only (a text value or decoded profile buffer). */
omnic_status omnic__exif_orientation_png(const uint8_t *buf, size_t len, int *orientation, omnic_err *err);

/* Orientation of a WebP file (borrows buf): the first EXIF chunk libwebp's demuxer exposes (an
 * extended "VP8X" file with the EXIF flag set), as Pillow's WebPAnimDecoder reads it. XMP is not
 * consulted (Pillow 9.4 keeps WebP XMP under a key getexif does not read). Returns 1..8. */
int omnic__exif_orientation_webp(const uint8_t *buf, size_t len);

#endif
