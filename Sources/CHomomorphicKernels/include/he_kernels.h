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
#endif
