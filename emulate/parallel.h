/* parallel.h: the sizes below which the library's loops stay on one thread.
 * Starting an OpenMP team costs a few microseconds; these are the element
 * counts from which splitting pays on the 2-core machines the benchmarks ran
 * on (bench/quantize, bench/scaling, bench/gemm).  They change speed only,
 * never results: every parallel loop gives the same bits on any thread count. */
#ifndef EXMY_PARALLEL_H
#define EXMY_PARALLEL_H

/* Scalar loops, tens of nanoseconds an element: the reference conversion,
 * decoding through exmy_code_to_f64 or a table. */
#define EXMY_OMP_MIN_SCALAR 4096
/* Vectorized loops, about a nanosecond an element: the float32 fast path,
 * decoding binary32 truncations by a shift. */
#define EXMY_OMP_MIN_VECTOR 32768
/* Recipes (amax, scale, cast) and GEMM operand decoding; for a GEMM the
 * product m*n*k below which it runs on one thread. */
#define EXMY_OMP_MIN_TENSOR 65536

#endif
