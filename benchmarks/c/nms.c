/* Greedy NMS as in kernels.nms: sort by descending score, keep a box unless its IoU with an
 * already kept box exceeds the threshold.  Returns the number of kept indices in keep[]. */
#include "bench.h"

typedef struct {
    float score;
    int64_t index;
} Scored;

/* Python's max/min on floats (a compare and a select), as kernels.nms uses them; fmaxf and
 * fminf would be libm calls at -O3 because of their NaN rules. */
static inline float py_max(float a, float b) { return b > a ? b : a; }
static inline float py_min(float a, float b) { return b < a ? b : a; }

static int by_score_desc(const void *a, const void *b) {
    float x = ((const Scored *)a)->score, y = ((const Scored *)b)->score;
    return (x < y) - (x > y);
}

int64_t nms(const float *restrict boxes, const float *restrict scores, int64_t n, float thr,
            int64_t *restrict keep) {
    Scored *order = malloc((size_t)n * sizeof *order);
    float *areas = malloc((size_t)n * sizeof *areas);
    for (int64_t i = 0; i < n; i++) {
        const float *bx = boxes + 4 * i;
        order[i] = (Scored){scores[i], i};
        areas[i] = (bx[2] - bx[0]) * (bx[3] - bx[1]);
    }
    qsort(order, (size_t)n, sizeof *order, by_score_desc);
    int64_t count = 0;
    for (int64_t a = 0; a < n; a++) {
        const int64_t i = order[a].index;
        const float *bi = boxes + 4 * i;
        int suppressed = 0;
        for (int64_t k = 0; k < count; k++) {
            const int64_t j = keep[k];
            const float *bj = boxes + 4 * j;
            float inter = py_max(py_min(bi[2], bj[2]) - py_max(bi[0], bj[0]), 0.0f) *
                          py_max(py_min(bi[3], bj[3]) - py_max(bi[1], bj[1]), 0.0f);
            if (inter / (areas[i] + areas[j] - inter) > thr) {
                suppressed = 1;
                break;
            }
        }
        if (!suppressed)
            keep[count++] = i;
    }
    free(order);
    free(areas);
    return count;
}
