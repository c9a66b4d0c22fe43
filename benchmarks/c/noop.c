/* Empty functions for measuring the bare cost of a ctypes call. */
#include <stdint.h>

void noop(void) {}

void noop2(const float *a, const float *b) {
    (void)a;
    (void)b;
}
