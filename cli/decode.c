/* decode.c: the decode command: codes (.npy) back to float32 or float64,
 * optionally with quantize-tensor's per-tensor or per-group scales. */
#include "cli/cli.h"
#include "emulate/recipe_traits.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *decode_usage =
  "usage: exmy decode FORMAT --in Q.npy --out X.npy [--f64]\n"
  "                   [--scales S.npy [--scaling RECIPE] [--tensor-scale S_ENC]]\n"
  "Decode FORMAT codes to their exact values: float32 (rounded to nearest even where the\n"
  "format does not fit binary32, as quantize --dequant), or float64 with --f64 (exact).\n"
  "  --in Q.npy          codes as exmy quantize / quantize-tensor --out write them (uint8/16/\n"
  "                      32/64, whichever first holds FORMAT), or an ml_dtypes array of\n"
  "                      the code width ('<V1', '<f1', '<V2')\n"
  "  --out X.npy         the values, same shape as Q\n"
  "  --scales S.npy      multiply by quantize-tensor --scales: float32 scale_inv, one per\n"
  "                      tensor (any 1-element array) or per group (srows x scols); uint8\n"
  "                      E8M0 codes (mx, mx:ocp) or E4M3 codes (nvfp4)\n"
  "  --scaling RECIPE    the recipe quantize-tensor used: sets the group shape (needed\n"
  "                      unless S has one element) and what uint8 scales are\n"
  "  --tensor-scale S    nvfp4: the tensor scale S_enc quantize-tensor printed; values are\n"
  "                      decode(q) * scale_inv * fp32(1/S_enc), exact in double, then rounded\n"
  "Q is rows x cols as quantize-tensor reads it (1-D: 1 x n; N-D: the last axis is columns).\n"
  "With --scales the output equals quantize-tensor --dequant bit for bit.\n";

static double parse_scale(const char *v) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (end == v || *end || !(d > 0) || d > 3.4028234663852886e38)
    cli_die("decode: bad --tensor-scale '%s' (a positive finite float32, e.g. 0x1.2p+3 as quantize-tensor prints)", v);
  if ((double)(float)d != d)
    cli_die("decode: --tensor-scale '%s' is not a float32 value (give the %%a text quantize-tensor prints)", v);
  return d;
}

int cmd_decode(int argc, char **argv) {
  const char *fmt_text = NULL, *in = NULL, *out = NULL, *scales = NULL, *recipe = NULL, *ts_text = NULL;
  int f64 = 0;
  cli_opts o;
  cli_opts_init(&o, "decode", argc, argv);
  while (cli_next(&o)) {
    if (!strcmp(o.key, "--in")) in = cli_value(&o);
    else if (!strcmp(o.key, "--out")) out = cli_value(&o);
    else if (!strcmp(o.key, "--scales")) scales = cli_value(&o);
    else if (!strcmp(o.key, "--scaling")) recipe = cli_value(&o);
    else if (!strcmp(o.key, "--tensor-scale")) ts_text = cli_value(&o);
    else if (!strcmp(o.key, "--f64")) { cli_no_value(&o); f64 = 1; }
    else if (!o.positional) cli_die("decode: unknown option '%s' (see exmy decode --help)", argv[o.i]);
    else if (!fmt_text) fmt_text = argv[o.i];
    else cli_die("decode: unexpected argument '%s' (expected one FORMAT)", argv[o.i]);
  }
  if (!fmt_text) cli_die("decode: no FORMAT given (see exmy decode --help)");
  exmy_format f;
  cli_parse_format(fmt_text, &f);
  if (!in) cli_die("decode: --in Q.npy is required");
  if (!out) cli_die("decode: --out X.npy is required");
  if ((recipe || ts_text) && !scales) cli_die("decode: %s needs --scales S.npy", recipe ? "--scaling" : "--tensor-scale");
  exmy_recipe rc;
  char err[EXMY_ERRLEN];
  if (recipe && exmy_recipe_parse(recipe, &rc, err, sizeof err)) cli_die("decode: %s", err);
  double tscale = ts_text ? parse_scale(ts_text) : 1.0;
  const exmy__recipe_traits *tr = recipe ? exmy__recipe_traits_of(rc.kind) : NULL;
  if (ts_text && (!tr || !tr->tensor_scale))
    cli_die("decode: --tensor-scale '%s' is for --scaling nvfp4 only", ts_text);

  exmy_array q, sc, x;
  const exmy_dtype cdt = cli_code_dtype(&f);
  if (exmy_npy_read_as(in, cdt, &q, err, sizeof err)) cli_die("decode: %s", err);
  if (f.bits < 64) { /* every code must be one of FORMAT's */
    for (size_t i = 0; i < q.count; i++) {
      uint64_t c = exmy_code_get(&f, q.data, i);
      if (c >> f.bits)
        cli_die("decode: %s: code 0x%llx at index %zu is not a %d-bit %s code", in, (unsigned long long)c, i,
                f.bits, f.name);
    }
  }
  size_t rows = 1, cols = 1;
  if (q.ndim >= 1) cols = q.shape[q.ndim - 1];
  for (int d = 0; d + 1 < q.ndim; d++) rows *= q.shape[d];

  x = q;
  x.dtype = f64 ? EXMY_DTYPE_F64 : EXMY_DTYPE_F32;
  x.data = malloc(q.count * exmy_dtype_size(x.dtype) + 1);
  if (!x.data) cli_die("decode: out of memory for %zu elements", q.count);

  if (!scales) {
    if (f64) exmy_codes_to_f64(&f, q.data, q.count, x.data);
    else exmy_codes_to_f32(&f, q.data, q.count, x.data);
  } else {
    if (exmy_npy_read(scales, &sc, err, sizeof err)) cli_die("decode: %s", err);
    size_t srows = sc.count == 1 ? 1 : sc.ndim == 2 ? sc.shape[0] : 0, scols = sc.count == 1 ? 1 : sc.ndim == 2 ? sc.shape[1] : 0;
    if (!srows || !scols)
      cli_die("decode: %s: scales must be srows x scols (2-D) or one element, not %d-D with %zu elements", scales,
              sc.ndim, sc.count);
    size_t br, bc;
    if (tr && !tr->whole) {
      br = rc.block_rows && rc.block_rows < rows ? rc.block_rows : (rows ? rows : 1);
      bc = rc.block_cols && rc.block_cols < cols ? rc.block_cols : (cols ? cols : 1);
    } else {
      br = rows ? rows : 1;
      bc = cols ? cols : 1;
    }
    size_t wr = rows ? (rows + br - 1) / br : 0, wc = cols ? (cols + bc - 1) / bc : 0;
    if (!recipe && sc.count != 1)
      cli_die("decode: %s: %zu x %zu scale groups: give --scaling RECIPE (the recipe quantize-tensor used)", scales,
              srows, scols);
    if (srows != wr || scols != wc)
      cli_die("decode: %s: %zu x %zu scales, but %s on %zu x %zu codes has %zu x %zu groups", scales, srows, scols,
              recipe ? recipe : "one per-tensor scale", rows, cols, wr, wc);
    float *sinv = malloc(sc.count * sizeof *sinv + 1);
    if (!sinv) cli_die("decode: out of memory");
    float tsi = 1.0f;
    if (sc.dtype == EXMY_DTYPE_F32) {
      memcpy(sinv, sc.data, sc.count * sizeof *sinv);
      if (ts_text) tsi = (float)(1.0 / tscale);
    } else if (sc.dtype == EXMY_DTYPE_U8 && tr && tr->scale_format) {
      exmy_format sf;
      cli_parse_format(tr->scale_format, &sf);
      exmy_codes_to_f32(&sf, sc.data, sc.count, sinv);
      if (tr->tensor_scale) {
        if (!ts_text) cli_die("decode: nvfp4 scales need --tensor-scale S_ENC (quantize-tensor prints it)");
        tsi = (float)(1.0 / tscale);
      }
    } else {
      cli_die("decode: %s: scales of dtype %s are not scale_inv (float32) or, with --scaling mx, mx:ocp or "
              "nvfp4, uint8 scale codes", scales, exmy_dtype_name(sc.dtype));
    }
    exmy_qtensor t;
    memset(&t, 0, sizeof t);
    t.fmt = f;
    t.rows = rows;
    t.cols = cols;
    t.codes = q.data;
    t.block_rows = br;
    t.block_cols = bc;
    t.srows = wr;
    t.scols = wc;
    t.scale_inv = sinv;
    t.tensor_scale_inv = tsi;
    t.tensor_scale = 1.0f;
    t.is_view = 1;
    if (!rows || !cols) { /* nothing to decode */ }
    else if (f64) exmy_qtensor_to_f64(&t, x.data);
    else exmy_qtensor_to_f32(&t, x.data);
    free(sinv);
    exmy_array_free(&sc);
  }
  if (exmy_npy_write(out, &x, err, sizeof err)) cli_die("decode: %s", err);
  fprintf(stderr, "exmy: decoded %zu %s codes of %s to %s\n", q.count, f.name, in, exmy_dtype_name(x.dtype));
  free(x.data);
  exmy_array_free(&q);
  return 0;
}
