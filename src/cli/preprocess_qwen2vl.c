/* `omnic preprocess` for Qwen2-VL image processors: pixel_values f32 [t*h*w, 3*temporal*patch^2]
 * as .npy and the grid as JSON, for comparison with the Hugging Face processor. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/limits.h"
#include "core/npy.h"
#include "io/file.h"
#include "mm/image.h"
#include "mm/qwen2vl_processor.h"

/* {"image_grid_thw": [t, h, w], "resized_hw": [H, W], "num_patches": n, "row_len": k,
 * "num_image_tokens": N} */
static int write_grid(const char *path, const omnic__qwen2vl_grid *g)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "omnic preprocess: cannot write %s\n", path);
        return 1;
    }
    fprintf(f,
            "{\"image_grid_thw\": [%lld, %lld, %lld], \"resized_hw\": [%lld, %lld], \"num_patches\": %lld, "
            "\"row_len\": %lld, \"num_image_tokens\": %lld}\n",
            (long long)g->t, (long long)g->h, (long long)g->w, (long long)g->resized_height,
            (long long)g->resized_width, (long long)g->n_patches, (long long)g->row_len, (long long)g->n_tokens);
    if (fclose(f) != 0) {
        fprintf(stderr, "omnic preprocess: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

int omnic__cli_preprocess_qwen2vl(const char *image_path, const omnic__qwen2vl_proc_params *config,
                                  const char *variant, long long min_pixels, long long max_pixels,
                                  const char *out_path, const char *grid_out)
{
    omnic_err err;
    omnic_err_clear(&err);
    omnic__qwen2vl_proc_params params = *config;
    if (variant) params.numerics = !strcmp(variant, "pil") ? OMNIC__NUMERICS_PIL : OMNIC__NUMERICS_TORCHVISION;
    if (omnic__qwen2vl_set_pixel_bounds(&params, min_pixels, max_pixels, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s\n", err.msg);
        return 2;
    }
    char *bytes = NULL;
    size_t len = 0;
    omnic__image img = {0};
    omnic__tensor *pv = NULL;
    omnic__qwen2vl_grid grid;
    int status = 1;
    if (omnic__read_file(image_path, OMNIC_MAX_MEDIA_BYTES, &bytes, &len, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s\n", err.msg);
        goto out;
    }
    if (omnic__image_decode((const uint8_t *)bytes, len, NULL, &img, &err) != OMNIC_OK ||
        omnic__qwen2vl_preprocess(&img, &params, &pv, &grid, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s: %s\n", image_path, err.msg);
        goto out;
    }
    if (omnic__npy_write(out_path, pv, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic preprocess: %s\n", err.msg);
        goto out;
    }
    if (grid_out && write_grid(grid_out, &grid) != 0) goto out;
    status = 0;
out:
    omnic__tensor_destroy(pv);
    omnic__image_deinit(&img);
    omnic_free(bytes);
    return status;
}
