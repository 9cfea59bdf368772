/* fuzz_mma: exmy_mma_parse (instruction names, ",zero=v1|v2") and one
 * instruction's arithmetic.  Input: a name line, then bytes that become the
 * operands.  Properties: an accepted instruction's canonical name (with its
 * zero rule) parses back to the same instruction; a refused one has an error
 * line.  Then D = A*B + C on a 2 x 2 tile whose elements are codes of their
 * formats taken from the input (scales too), decoded exactly: exmy_mma either
 * computes it or refuses with an error (NaN/inf and every code included),
 * under ASan/UBSan. */
#include "tests/fuzz/fuzz.h"
#include "exmy.h"

static int same_instr(const exmy_mma_instr *a, const exmy_mma_instr *b) {
  return !strcmp(a->name, b->name) && a->path == b->path && a->zero == b->zero && a->k == b->k &&
         a->block == b->block && a->has_scale == b->has_scale && !strcmp(a->a_fmt.name, b->a_fmt.name) &&
         !strcmp(a->b_fmt.name, b->b_fmt.name) && !strcmp(a->c_fmt.name, b->c_fmt.name) &&
         !strcmp(a->d_fmt.name, b->d_fmt.name) && (!a->has_scale || !strcmp(a->s_fmt.name, b->s_fmt.name));
}

/* n codes of fmt from the input bytes (cycled), decoded exactly */
static void values(const exmy_format *f, const uint8_t *p, size_t np, size_t *off, size_t n, double *out) {
  static uint8_t raw[1024 * 8];
  for (size_t i = 0; i < n; i++) {
    uint64_t c = 0;
    for (int b = 0; b < (f->bits + 7) / 8; b++) c = c << 8 | (np ? p[(*off)++ % np] : 0);
    exmy_code_set(f, raw, i, c & (f->sign_mask | f->mag_mask));
  }
  exmy_codes_to_f64(f, raw, n, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nl = memchr(data, '\n', size);
  const size_t namelen = nl ? (size_t)(nl - data) : size;
  char *name = fuzz_str(data, namelen);
  char err[EXMY_ERRLEN], buf[200];
  exmy_mma_instr in, back;
  if (exmy_mma_parse(name, &in, err, sizeof err)) {
    FUZZ_CHECK(err[0] && memchr(err, 0, sizeof err), "refused '%s' without an error", name);
    free(name);
    return 0;
  }
  FUZZ_CHECK(memchr(in.name, 0, sizeof in.name) != NULL, "name not terminated");
  snprintf(buf, sizeof buf, "%s%s", in.name, in.zero == EXMY_MMA_ZERO_V1 ? ",zero=v1" : "");
  FUZZ_CHECK(exmy_mma_parse(buf, &back, err, sizeof err) == 0, "'%s' -> '%s' does not parse: %s", name, buf, err);
  FUZZ_CHECK(same_instr(&in, &back), "'%s' -> '%s' parses to another instruction", name, buf);
  free(name);
  /* one 2 x 2 tile */
  enum { M = 2, N = 2 };
  if (in.k < 1 || in.k > 256) return 0;
  const size_t k = (size_t)in.k, nb = in.has_scale ? k / (size_t)in.block : 0;
  static double a[M * 256], b[256 * N], c[M * N], sa[M * 256], sb[256 * N];
  uint64_t d[M * N];
  const uint8_t *p = nl ? nl + 1 : data + size;
  const size_t np = (size_t)(data + size - p);
  size_t off = 0;
  values(&in.a_fmt, p, np, &off, M * k, a);
  values(&in.b_fmt, p, np, &off, k * N, b);
  values(&in.c_fmt, p, np, &off, M * N, c);
  if (in.has_scale) {
    values(&in.s_fmt, p, np, &off, M * nb, sa);
    values(&in.s_fmt, p, np, &off, nb * N, sb);
  }
  if (exmy_mma(&in, M, N, a, b, c, in.has_scale ? sa : NULL, in.has_scale ? sb : NULL, d, err, sizeof err))
    FUZZ_CHECK(err[0] && memchr(err, 0, sizeof err), "%s: exmy_mma refused without an error", in.name);
  return 0;
}
