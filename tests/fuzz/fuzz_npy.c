/* fuzz_npy: exmy_npy_read and exmy_npy_read_as on a .npy file (headers and
 * data).  The input is written to an in-memory file (memfd) that the reader
 * opens by name, so the real fopen/fstat/fread path runs.  Properties: an
 * accepted array's count is the product of its shape; writing it back with
 * exmy_npy_write and reading that gives the same dtype, shape and bytes. */
#include "tests/fuzz/fuzz.h"
#include "exmy.h"

static size_t dtype_size(exmy_dtype d) {
  switch (d) {
  case EXMY_DTYPE_F64: case EXMY_DTYPE_U64: return 8;
  case EXMY_DTYPE_F32: case EXMY_DTYPE_U32: return 4;
  case EXMY_DTYPE_BF16: case EXMY_DTYPE_F16: case EXMY_DTYPE_U16: return 2;
  default: return 1;
  }
}

static fuzz_file in;

static void check(const exmy_array *a) {
  char err[EXMY_ERRLEN];
  size_t n = 1;
  FUZZ_CHECK(a->ndim >= 0 && a->ndim <= 8, "ndim %d", a->ndim);
  for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
  FUZZ_CHECK(n == a->count, "count %zu, shape product %zu", a->count, n);
  if (a->count > (1u << 20)) return;
  volatile unsigned char sum = 0; /* ASan: every byte of the data is there */
  for (size_t i = 0; i < a->count * dtype_size(a->dtype); i++) sum ^= ((const unsigned char *)a->data)[i];
  (void)sum;
  /* exmy_npy_write writes PATH.tmp and renames, so it needs a real folder:
   * one made and removed per check, so no run leaves folders behind. */
  const char *tmp = getenv("TMPDIR");
  char dir[256], outpath[300];
  snprintf(dir, sizeof dir, "%s/exmy-fuzz-npy-XXXXXX", access("/dev/shm", W_OK) ? (tmp ? tmp : "/tmp") : "/dev/shm");
  if (!mkdtemp(dir)) abort();
  snprintf(outpath, sizeof outpath, "%s/a.npy", dir);
  const int wrote = exmy_npy_write(outpath, a, err, sizeof err) == 0;
  exmy_array b = {0};
  const int read = wrote && exmy_npy_read_as(outpath, a->dtype, &b, err, sizeof err) == 0;
  unlink(outpath);
  rmdir(dir);
  FUZZ_CHECK(wrote, "write back: %s", err);
  FUZZ_CHECK(read, "read back: %s", err);
  FUZZ_CHECK(b.dtype == a->dtype && b.ndim == a->ndim && b.count == a->count, "read back: another array");
  for (int d = 0; d < a->ndim; d++) FUZZ_CHECK(b.shape[d] == a->shape[d], "read back: shape[%d]", d);
  FUZZ_CHECK(!a->count || !memcmp(a->data, b.data, a->count * dtype_size(a->dtype)), "read back: other bytes");
  exmy_array_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[EXMY_ERRLEN];
  exmy_array a;
  fuzz_file_set(&in, data, size);
  if (exmy_npy_read(in.path, &a, err, sizeof err) == 0) {
    check(&a);
    exmy_array_free(&a);
  } else {
    FUZZ_CHECK(err[0] && a.data == NULL, "refused without an error or kept data");
  }
  /* read_as with a dtype picked by the size (covers the untyped '|V1' etc.) */
  const exmy_dtype want = (exmy_dtype)(size % (EXMY_DTYPE_E5M2 + 1));
  if (exmy_npy_read_as(in.path, want, &a, err, sizeof err) == 0) {
    FUZZ_CHECK(a.dtype == want, "read_as %d gave dtype %d", want, a.dtype);
    check(&a);
    exmy_array_free(&a);
  } else {
    FUZZ_CHECK(err[0] && a.data == NULL, "refused without an error or kept data");
  }
  return 0;
}
