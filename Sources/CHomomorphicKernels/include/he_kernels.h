// Data-parallel loops of the BFV implementation (NTT butterflies, multiply-accumulate),
// compiled for several x86 levels with runtime dispatch (GCC/Clang target_clones, glibc ifunc).
// Swift has no per-function target features, so these few loops are C; see
// Sources/HomomorphicEncryption/Polynomial/NTT.swift for the algorithm they implement.
#ifndef NETEXT_HE_KERNELS_H
#define NETEXT_HE_KERNELS_H
#include <stddef.h>
#include <stdint.h>

/// Negacyclic forward NTT in place (Cooley–Tukey, natural in, bit-reversed out, Harvey lazy
/// butterflies). w/ws: ψ^rev(i) and their Shoup companions. q < 2^30. Output fully reduced.
void netext_he_ntt_forward(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q);

/// Inverse of the above (Gentleman–Sande), with N^−1 folded into the last stage:
/// f = N^−1, g = N^−1·ψ^−rev(1), with Shoup companions fs, gs. Output fully reduced.
void netext_he_ntt_inverse(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q,
                           uint32_t f, uint32_t fs, uint32_t g, uint32_t gs);

/// acc[j] += x[j] · y[j] (64-bit lanes, no reduction).
void netext_he_multiply_accumulate(uint64_t *acc, const uint32_t *x, const uint32_t *y, size_t count);

/// acc0[j] += x[j] · b[j]; acc1[j] += x[j] · a[j].
void netext_he_multiply_accumulate_pair(uint64_t *acc0, uint64_t *acc1, const uint32_t *x,
                                        const uint32_t *b, const uint32_t *a, size_t count);
/// out[j] = x[j] mod q for 64-bit x[j] (q < 2^30): x = hi·2^32 + lo, hi·(2^32 mod q) by Shoup's
/// method (c, cs = companion), lo by Shoup with w = 1 (r = floor(2^32 / q)); all 32×32-bit
/// products, so it vectorizes where a 64-bit Barrett reduction does not.
void netext_he_reduce64(uint32_t *out, const uint64_t *x, size_t count, uint32_t q, uint32_t c, uint32_t cs, uint32_t r);

/// The same, writing the residues back into the 64-bit lanes.
void netext_he_reduce64_in_place(uint64_t *x, size_t count, uint32_t q, uint32_t c, uint32_t cs, uint32_t r);

/// out[j] = (out[j] + x[j]·y[j]) mod q, all below q (c, cs, r as for netext_he_reduce64).
void netext_he_multiply_add_mod(uint32_t *out, const uint32_t *x, const uint32_t *y, size_t count, uint32_t q,
                                uint32_t c, uint32_t cs, uint32_t r);

/// The centered lift of one coefficient-form polynomial from Q = q_0⋯q_{L−1} to the
/// auxiliary primes b_0…b_{K−1} (Halevi–Polyakov–Shoup §4): with t_i = [x_i·y_i]_{q_i} and
/// v = round(Σ t_i/q_i), out_a = Σ t_i·(Q/q_i mod b_a) − v·(Q mod b_a) mod b_a.
/// x: L rows of n; out: K rows of n; q, y, ys (Shoup companions of y), inverse_q: L entries;
/// b, b_c, b_cs, b_r (reduce64 constants), q_mod_b: K entries; q_hat_mod_b: K×L (row a, column i);
/// terms: L·n scratch; fraction, sums: n scratch each.
void netext_he_lift(const uint32_t *x, uint32_t *out, size_t n, size_t levels, size_t auxiliary,
                    const uint32_t *q, const uint32_t *y, const uint32_t *ys, const double *inverse_q,
                    const uint32_t *b, const uint32_t *b_c, const uint32_t *b_cs, const uint32_t *b_r,
                    const uint32_t *q_hat_mod_b, const uint32_t *q_mod_b, uint32_t *terms, double *fraction,
                    uint64_t *sums);

/// values[j] = values[j] mod q for values below 2q.
void netext_he_reduce_once(uint32_t *values, size_t count, uint32_t q);

/// out[j] = x[j] mod q for any 32-bit x[j] (Shoup with w = 1: r = floor(2^32 / q)).
void netext_he_reduce32(uint32_t *out, const uint32_t *x, size_t count, uint32_t q, uint32_t r);

/// row[j] = (row[j] − correction[j]) · inv mod q (inv with Shoup companion invs); all inputs
/// below q.
void netext_he_subtract_multiply(uint32_t *row, const uint32_t *correction, size_t count, uint32_t q,
                                 uint32_t inv, uint32_t invs);
#endif
