/* `omnic preprocess`: one image file through a checkpoint's image processor, pixel_values
 * written as .npy (f32 [3, H, W]) for comparison with the Hugging Face processors. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "core/limits.h"
#include "core/npy.h"
#include "io/file.h"
#include "mm/image.h"
#include "mm/image_processor.h"
#include "models/image_processor_config.h"
#include "models/qwen2vl_processor_config.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: omnic preprocess --image FILE (-m DIR | --config preprocessor_config.json)\n"
               "                        [--variant pil|torchvision] --out FILE.npy\n"
               "                        [--grid-out FILE.json] [--min-pixels N] [--max-pixels N]\n"
               "  runs the checkpoint's image processor (CLIPImageProcessor, SiglipImageProcessor) on FILE\n"
               "  (JPEG, PNG or WebP) and writes pixel_values, f32 [3, H, W], as .npy.\n"
               "  --variant picks Hugging Face's PIL (\"slow\") or torchvision (\"fast\") numerics; the\n"
               "  default comes from the config's image_processor_type.\n"
               "  Qwen2-VL processors (Qwen2VLImageProcessor[Fast]) write pixel_values f32\n"
               "  [t*h*w, 3*temporal*patch*patch]; --grid-out writes image_grid_thw, the resized size and\n"
               "  the <|image_pad|> count as JSON; --min-pixels / --max-pixels override the config's bounds.\n");
}

int omnic__cli_preprocess(int argc, char **argv)
{
    const char *image_path = NULL, *dir = NULL, *config = NULL, *variant = NULL, *out_path = NULL;
    const char *grid_out = NULL;
    int64_t min_pixels = 0, max_pixels = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        int r;
        if ((r = omnic__arg_str(argc, argv, &i, NULL, "--image", &image_path)) != 0 ||
            (r = omnic__arg_str(argc, argv, &i, "-m", "--model", &dir)) != 0 ||
            (r = omnic__arg_str(argc, argv, &i, NULL, "--config", &config)) != 0 ||
            (r = omnic__arg_str(argc, argv, &i, NULL, "--variant", &variant)) != 0 ||
            (r = omnic__arg_str(argc, argv, &i, "-o", "--out", &out_path)) != 0 ||
            (r = omnic__arg_str(argc, argv, &i, NULL, "--grid-out", &grid_out)) != 0 ||
            (r = omnic__arg_i64(argc, argv, &i, NULL, "--min-pixels", 1, OMNIC_MAX_IMAGE_PIXELS, &min_pixels)) != 0 ||
            (r = omnic__arg_i64(argc, argv, &i, NULL, "--max-pixels", 1, OMNIC_MAX_IMAGE_PIXELS, &max_pixels)) != 0) {
            if (r < 0) return 2;
            continue;
        }
        fprintf(stderr, "omnic preprocess: unknown option '%s'\n", argv[i]);
        usage(stderr);
        return 2;
    }
    if (!image_path || !out_path || (!dir == !config)) {
        fprintf(stderr, "omnic preprocess: need --image, --out and exactly one of -m DIR or --config FILE\n");
        usage(stderr);
        return 2;
    }
    if (variant && strcmp(variant, "pil") != 0 && strcmp(variant, "torchvision") != 0) {
        fprintf(stderr, "omnic preprocess: --variant must be pil or torchvision, got '%s'\n", variant);
        return 2;
    }

    omnic_err err;
    omnic_err_clear(&err);
    omnic__qwen2vl_proc_params qparams;
    bool qwen = false;
    omnic_status rc = dir ? omnic__qwen2vl_processor_config_load_dir(dir, &qparams, &qwen, &err)
                          : omnic__qwen2vl_processor_config_load(config, &qparams, &qwen, &err);
    if (rc != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s\n", err.msg);
        return 1;
    }
    if (qwen)
        return omnic__cli_preprocess_qwen2vl(image_path, &qparams, variant, min_pixels, max_pixels, out_path,
                                             grid_out);
    if (grid_out || min_pixels || max_pixels) {
        fprintf(stderr, "omnic preprocess: --grid-out, --min-pixels and --max-pixels need a Qwen2-VL processor config\n");
        return 2;
    }
    omnic__image_proc_params params;
    rc = dir ? omnic__image_processor_config_load_dir(dir, &params, &err)
             : omnic__image_processor_config_load(config, &params, &err);
    if (rc != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s\n", err.msg);
        return 1;
    }
    if (variant && !strcmp(variant, "pil")) {
        params.numerics = OMNIC__NUMERICS_PIL;
        params.crop_rounding = OMNIC__CROP_FLOOR;
    } else if (variant) {
        params.numerics = OMNIC__NUMERICS_TORCHVISION;
        params.crop_rounding = OMNIC__CROP_ROUND_HALF_EVEN;
    }

    char *bytes = NULL;
    size_t len = 0;
    omnic__image img = {0};
    omnic__tensor *pv = NULL;
    int status = 1;
    if ((rc = omnic__read_file(image_path, OMNIC_MAX_MEDIA_BYTES, &bytes, &len, &err)) != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s\n", err.msg); /* names the path */
        goto out;
    }
    if ((rc = omnic__image_decode((const uint8_t *)bytes, len, NULL, &img, &err)) != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s: %s\n", image_path, err.msg);
        goto out;
    }
    if ((rc = omnic__image_preprocess(&img, &params, &pv, &err)) != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s: %s\n", image_path, err.msg);
        goto out;
    }
    if ((rc = omnic__npy_write(out_path, pv, &err)) != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s\n", err.msg);
        goto out;
    }
    status = 0;
out:
    omnic__tensor_destroy(pv);
    omnic__image_deinit(&img);
    omnic_free(bytes);
    return status;
}
