/* `omnic preprocess`: one image file through a checkpoint's image processor (the family
 * interface's, chosen by the config's image_processor_type), pixel_values written as .npy for
 * comparison with the Hugging Face processors. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "core/limits.h"
#include "core/npy.h"
#include "io/file.h"
#include "io/json.h"
#include "mm/image.h"
#include "models/media.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: omnic preprocess --image FILE (-m DIR | --config preprocessor_config.json)\n"
            "                        [--variant pil|torchvision] --out FILE.npy\n"
            "                        [--grid-out FILE.json] [--min-pixels N] [--max-pixels N]\n"
            "  runs the checkpoint's image processor (CLIP, SigLIP, Gemma 3, Qwen2-VL, Phi-4-multimodal)\n"
            "  on FILE (JPEG, PNG or WebP) and writes pixel_values as .npy: f32 [3, H, W], Qwen2-VL's\n"
            "  patches, or Phi-4-multimodal's [1 + crops, 3, 448, 448].\n"
            "  --variant picks Hugging Face's PIL (\"slow\") or torchvision (\"fast\") numerics; the\n"
            "  default comes from the config's image_processor_type.\n"
            "  Qwen2-VL processors (Qwen2VLImageProcessor[Fast]) write pixel_values f32\n"
            "  [t*h*w, 3*temporal*patch*patch]; --grid-out writes image_grid_thw, the resized size and\n"
            "  the <|image_pad|> count as JSON; --min-pixels / --max-pixels override the config's bounds.\n");
}

/* {"image_grid_thw": [t, h, w], "resized_hw": [H, W], "num_patches": n, "row_len": k,
 * "num_image_tokens": N} */
static int write_grid(const char *path, const omnic__media_item *it)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "omnic preprocess: cannot write %s\n", path);
        return 1;
    }
    fprintf(f,
            "{\"image_grid_thw\": [%lld, %lld, %lld], \"resized_hw\": [%lld, %lld], \"num_patches\": %lld, "
            "\"row_len\": %lld, \"num_image_tokens\": %lld}\n",
            (long long)it->grid[0], (long long)it->grid[1], (long long)it->grid[2], (long long)it->out_h,
            (long long)it->out_w, (long long)it->input->dims[0], (long long)it->input->dims[1],
            (long long)it->rows);
    if (fclose(f) != 0) {
        fprintf(stderr, "omnic preprocess: cannot write %s\n", path);
        return 1;
    }
    return 0;
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
            (r = omnic__arg_i64(argc, argv, &i, NULL, "--min-pixels", 1, OMNIC_MAX_IMAGE_PIXELS,
                                &min_pixels)) != 0 ||
            (r = omnic__arg_i64(argc, argv, &i, NULL, "--max-pixels", 1, OMNIC_MAX_IMAGE_PIXELS,
                                &max_pixels)) != 0) {
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
    char path[4096];
    if (dir)
        snprintf(path, sizeof path, "%s/preprocessor_config.json", dir);
    else
        snprintf(path, sizeof path, "%s", config);
    json_t *pc = NULL;
    omnic__media_proc proc = {0};
    const omnic__media_kwargs kw = {.min_pixels = min_pixels, .max_pixels = max_pixels};
    char *bytes = NULL;
    size_t len = 0;
    omnic__image img = {0};
    omnic__media_item item = {0};
    int status = 1;
    omnic_status rc = omnic__json_load_file(path, OMNIC_MAX_CONFIG_BYTES, &pc, &err);
    if (rc == OMNIC_OK)
        rc = omnic__media_proc_from_config(&proc, pc, path, OMNIC_MODALITY_IMAGE, variant, &kw, &err);
    if (rc != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s\n", err.msg);
        status = rc == OMNIC_E_UNSUPPORTED || rc == OMNIC_E_INVALID ? 2 : 1;
        goto out;
    }
    if ((rc = omnic__read_file(image_path, OMNIC_MAX_MEDIA_BYTES, &bytes, &len, &err)) != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s\n", err.msg); /* names the path */
        goto out;
    }
    if ((rc = omnic__image_decode((const uint8_t *)bytes, len, NULL, &img, &err)) != OMNIC_OK ||
        (rc = omnic__media_preprocess(&proc, &(omnic__decoded_media){.image = &img}, &item, &err)) !=
            OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s: %s\n", image_path, err.msg);
        goto out;
    }
    if (grid_out && !item.has_grid) {
        fprintf(stderr,
                "omnic preprocess: --grid-out: this processor makes fixed-size pixel_values without a grid "
                "(grids come from Qwen2-VL-style processors)\n");
        status = 2;
        goto out;
    }
    if ((rc = omnic__npy_write(out_path, item.input, &err)) != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s\n", err.msg);
        goto out;
    }
    if (grid_out && write_grid(grid_out, &item) != 0) goto out;
    status = 0;
out:
    omnic__media_item_deinit(&item);
    omnic__image_deinit(&img);
    omnic_free(bytes);
    omnic__media_proc_deinit(&proc);
    json_decref(pc);
    return status;
}
