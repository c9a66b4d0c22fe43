/* STREAM triad a = b + s*c over doubles with OpenMP; returns the best time of reps passes.
 * Arrays are first touched by the same threads (static schedule) that later stream them. */
#include <omp.h>
#include <stdint.h>

double triad(double *restrict a, double *restrict b, double *restrict c, int64_t n,
             int threads, int reps) {
    omp_set_num_threads(threads);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = 1.0;
        c[i] = 2.0;
    }
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++)
            a[i] = b[i] + 3.0 * c[i];
        double t = omp_get_wtime() - t0;
        best = t < best ? t : best;
    }
    return best;
}
