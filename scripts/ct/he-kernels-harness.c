// Runs every homomorphic-encryption kernel of Sources/CHomomorphicKernels once on data marked
// secret for Valgrind's memcheck (VALGRIND_MAKE_MEM_UNDEFINED): memcheck then reports every
// conditional branch and every memory address that depends on it. Moduli and twiddle factors
// are public and stay defined. The values need not be a meaningful ciphertext: only which
// instructions the secret reaches matters. Used by scripts/check-constant-time.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/memcheck.h>
#include "he_kernels.h"

enum { N = 1024, LEVELS = 2, AUXILIARY = 2 };

static uint64_t state = 0x9e3779b97f4a7c15u;
static uint32_t next32(void) {
    state ^= state << 13; state ^= state >> 7; state ^= state << 17;
    return (uint32_t)state;
}

static void fill(uint32_t *values, size_t count, uint32_t bound) {
    for (size_t i = 0; i < count; i++) values[i] = next32() % bound;
}

#define SECRET(p, bytes) VALGRIND_MAKE_MEM_UNDEFINED((p), (bytes))
#define PUBLIC(p, bytes) VALGRIND_MAKE_MEM_DEFINED((p), (bytes))

int main(void) {
    const uint32_t q = 1073479681u;  // 2^30 - 2^18 + 1
    static uint32_t a[N], b[N], w[N], ws_low[N], out[N], correction[N];
    static uint64_t acc0[N], acc1[N], wide[N];
    uint32_t ws[N];
    fill(w, N, q);
    for (size_t i = 0; i < N; i++) ws[i] = (uint32_t)(((uint64_t)w[i] << 32) / q);
    (void)ws_low;
    const uint32_t c = next32() % q, cs = (uint32_t)(((uint64_t)c << 32) / q), r = (uint32_t)(((uint64_t)1 << 32) / q);

    fill(a, N, 2 * q); SECRET(a, sizeof a);
    netext_he_ntt_forward(a, N, w, ws, q);
    fill(a, N, 2 * q); SECRET(a, sizeof a);
    netext_he_ntt_inverse(a, N, w, ws, q, c, cs, c, cs);

    fill(a, N, q); fill(b, N, q); SECRET(a, sizeof a); SECRET(b, sizeof b);
    memset(acc0, 0, sizeof acc0); memset(acc1, 0, sizeof acc1);
    netext_he_multiply_accumulate(acc0, a, b, N);
    netext_he_multiply_accumulate_pair(acc0, acc1, a, b, a, N);
    netext_he_reduce64(out, acc0, N, q, c, cs, r);
    for (size_t i = 0; i < N; i++) wide[i] = ((uint64_t)next32() << 32 | next32()) % ((uint64_t)q << 30);
    SECRET(wide, sizeof wide);
    netext_he_reduce64_in_place(wide, N, q, c, cs, r);
    fill(out, N, 2 * q); SECRET(out, sizeof out);
    netext_he_reduce_once(out, N, q);
    netext_he_reduce32(out, a, N, q, r);
    fill(correction, N, q); SECRET(correction, sizeof correction);
    fill(out, N, q); SECRET(out, sizeof out);
    netext_he_subtract_multiply(out, correction, N, q, c, cs);
    netext_he_multiply_add_mod(out, a, b, N, q, c, cs, r);

    // The results stay secret; make them defined only to return without touching them.
    PUBLIC(out, sizeof out); PUBLIC(acc0, sizeof acc0); PUBLIC(acc1, sizeof acc1); PUBLIC(wide, sizeof wide); PUBLIC(a, sizeof a);
    return 0;
}
