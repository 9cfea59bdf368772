/* dtype.c: the one element-type enum's table (sizes and numpy names), and
 * the library's version. */
#include "exmy.h"

static const struct {
  exmy_dtype dt;
  size_t size;
  const char *name; /* numpy / ml_dtypes name */
} dtypes[] = {
  {EXMY_DTYPE_F32, 4, "float32"},         {EXMY_DTYPE_F64, 8, "float64"},
  {EXMY_DTYPE_BF16, 2, "bfloat16"},       {EXMY_DTYPE_F16, 2, "float16"},
  {EXMY_DTYPE_U8, 1, "uint8"},            {EXMY_DTYPE_U16, 2, "uint16"},
  {EXMY_DTYPE_U32, 4, "uint32"},          {EXMY_DTYPE_U64, 8, "uint64"},
  {EXMY_DTYPE_E4M3FN, 1, "float8_e4m3fn"}, {EXMY_DTYPE_E5M2, 1, "float8_e5m2"},
};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

size_t exmy_dtype_size(exmy_dtype dtype) {
  for (size_t i = 0; i < NDTYPES; i++)
    if (dtypes[i].dt == dtype) return dtypes[i].size;
  return 0;
}

const char *exmy_dtype_name(exmy_dtype dtype) {
  for (size_t i = 0; i < NDTYPES; i++)
    if (dtypes[i].dt == dtype) return dtypes[i].name;
  return "?";
}

const char *exmy_version(void) { return EXMY_VERSION; }
