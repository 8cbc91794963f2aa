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

static void usage(FILE *f)
{
    fprintf(f, "usage: omnic preprocess --image FILE (-m DIR | --config preprocessor_config.json)\n"
               "                        [--variant pil|torchvision] --out FILE.npy\n"
               "  runs the checkpoint's image processor (CLIPImageProcessor, SiglipImageProcessor) on FILE\n"
               "  (JPEG, PNG or WebP) and writes pixel_values, f32 [3, H, W], as .npy.\n"
               "  --variant picks Hugging Face's PIL (\"slow\") or torchvision (\"fast\") numerics; the\n"
               "  default comes from the config's image_processor_type.\n");
}

int omnic__cli_preprocess(int argc, char **argv)
{
    const char *image_path = NULL, *dir = NULL, *config = NULL, *variant = NULL, *out_path = NULL;
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
            (r = omnic__arg_str(argc, argv, &i, "-o", "--out", &out_path)) != 0) {
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
    omnic__image_proc_params params;
    omnic_status rc = dir ? omnic__image_processor_config_load_dir(dir, &params, &err)
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
