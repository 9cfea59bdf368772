/* vocab.c: the word-level vocabulary of `vocab = word:K` (data.c uses it).
 *
 * Tokens: a word is a maximal run of ASCII letters, digits and bytes >= 0x80
 * (UTF-8 letters stay inside words); whitespace (space, \t, \n, \v, \f, \r)
 * separates tokens and is dropped; every other byte (punctuation) is a token
 * of its own.  Case is kept.  The vocabulary: token 0 is <unk>, then the K
 * most frequent tokens of the training split (the first ntrain tokens), most
 * frequent first, ties broken by first appearance; every other token (and
 * any token seen only in validation) is <unk>.  A pure function of the text
 * and K. */
#include "experiments/xp.h"

#include <stdlib.h>
#include <string.h>

static int is_space(unsigned char b) { return b == ' ' || (b >= '\t' && b <= '\r'); }
static int is_word(unsigned char b) {
  return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b >= 0x80;
}

size_t xp_data_split(size_t ntok, size_t need) {
  size_t ntrain = ntok - ntok / 10; /* the last 10% validates */
  if (ntok - ntrain < need) ntrain = ntok - need;
  return ntrain;
}

typedef struct entry { size_t start, len; size_t count, first; int id; } entry;

static uint64_t fnv(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h;
}

typedef struct rank_key { size_t count, first; int ent; } rank_key;
/* most frequent first, then first appearance */
static int by_count(const void *a, const void *b) {
  const rank_key *x = a, *y = b;
  if (x->count != y->count) return x->count > y->count ? -1 : 1;
  return x->first < y->first ? -1 : x->first > y->first;
}

int xp_words_build(xp_words *w, const char *text, size_t len, int K, size_t need, char *err, size_t errlen) {
  memset(w, 0, sizeof *w);
  size_t cap = len / 2 + 2, n = 0;
  size_t *start = malloc(cap * sizeof *start), *tlen = malloc(cap * sizeof *tlen);
  if (!start || !tlen) goto oom;
  for (size_t i = 0; i < len;) { /* the tokens, as spans of text */
    const unsigned char b = (unsigned char)text[i];
    if (is_space(b)) { i++; continue; }
    size_t j = i + 1;
    if (is_word(b))
      while (j < len && is_word((unsigned char)text[j])) j++;
    if (n == cap) {
      cap *= 2;
      size_t *s2 = realloc(start, cap * sizeof *s2);
      if (!s2) goto oom;
      start = s2;
      size_t *l2 = realloc(tlen, cap * sizeof *l2);
      if (!l2) goto oom;
      tlen = l2;
    }
    start[n] = i;
    tlen[n++] = j - i;
    i = j;
  }
  if (n < 2 * need) {
    free(start);
    free(tlen);
    return xp_errf(err, errlen, "data: %zu word tokens, too few for seq_len (needs twice 2*seq_len+2)", n);
  }
  w->ntok = n;
  w->ntrain = xp_data_split(n, need);
  /* distinct tokens: open addressing over every token's span */
  size_t hsize = 16;
  while (hsize < 2 * n) hsize *= 2;
  int *slot = malloc(hsize * sizeof *slot);
  rank_key *idx = NULL;
  entry *e = malloc((n + 1) * sizeof *e);
  w->tok = malloc(n * sizeof *w->tok);
  int *ent_of = malloc(n * sizeof *ent_of);
  if (!slot || !e || !w->tok || !ent_of) {
    free(slot), free(e), free(ent_of);
    goto oom;
  }
  memset(slot, -1, hsize * sizeof *slot);
  int ne = 0;
  for (size_t t = 0; t < n; t++) {
    size_t h = (size_t)fnv(text + start[t], tlen[t]) & (hsize - 1);
    while (slot[h] >= 0 && (e[slot[h]].len != tlen[t] || memcmp(text + e[slot[h]].start, text + start[t], tlen[t])))
      h = (h + 1) & (hsize - 1);
    if (slot[h] < 0) {
      slot[h] = ne;
      e[ne] = (entry){start[t], tlen[t], 0, t, 0};
      ne++;
    }
    ent_of[t] = slot[h];
    if (t < w->ntrain) e[slot[h]].count++;
  }
  /* the K most frequent training tokens get ids 1..K */
  idx = malloc(((size_t)ne + 1) * sizeof *idx);
  if (!idx) {
    free(slot), free(e), free(ent_of);
    goto oom;
  }
  int nv = 0;
  for (int i = 0; i < ne; i++)
    if (e[i].count) idx[nv++] = (rank_key){e[i].count, e[i].first, i};
  qsort(idx, (size_t)nv, sizeof *idx, by_count);
  if (nv > K) nv = K;
  w->vocab = nv + 1;
  size_t chars = 6;
  for (int v = 0; v < nv; v++) chars += e[idx[v].ent].len + 1;
  w->word = malloc((size_t)w->vocab * sizeof *w->word);
  w->buf = malloc(chars);
  if (!w->word || !w->buf) {
    free(slot), free(e), free(ent_of), free(idx);
    goto oom;
  }
  char *p = w->buf;
  memcpy(p, "<unk>", 6);
  w->word[0] = p;
  p += 6;
  for (int v = 0; v < nv; v++) {
    entry *x = &e[idx[v].ent];
    x->id = v + 1;
    memcpy(p, text + x->start, x->len);
    p[x->len] = 0;
    w->word[v + 1] = p;
    p += x->len + 1;
  }
  for (size_t t = 0; t < n; t++) w->tok[t] = e[ent_of[t]].id;
  free(slot), free(e), free(ent_of), free(idx), free(start), free(tlen);
  return 0;
oom:
  free(start);
  free(tlen);
  xp_words_free(w);
  return xp_errf(err, errlen, "out of memory");
}

void xp_words_free(xp_words *w) {
  free(w->tok);
  free(w->word);
  free(w->buf);
  memset(w, 0, sizeof *w);
}
