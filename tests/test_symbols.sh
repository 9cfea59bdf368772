#!/bin/sh
# test_symbols.sh: libexmy exports exactly the functions exmy.h marks
# EXMY_API (everything internal is hidden), and the version macros, the
# library's version and configure's agree.  Skips (77) in a static-only build.
NAME=test_symbols
. "${srcdir:-.}/tests/cli_harness.sh"
top=$(dirname "$EXMY")
so=$top/.libs/libexmy.so
hdr=${srcdir:-.}/exmy.h
if [ ! -f "$so" ]; then echo "$NAME: no shared library ($so): static-only build"; exit 77; fi
command -v nm >/dev/null 2>&1 || { echo "$NAME: no nm"; exit 77; }

# Function names declared after EXMY_API (declarations may wrap lines).
sed -n 's/^EXMY_API [^(]*[ *]\(exmy_[a-z0-9_]*\)(.*/\1/p' "$hdr" | sort -u > "$T/declared"
nm -D --defined-only "$so" | awk '{print $NF}' | sort -u > "$T/exported"
if [ "$(wc -l < "$T/declared")" -ge 60 ]; then pass "exmy.h declares $(wc -l < "$T/declared") EXMY_API functions"
else fail "exmy.h declares only $(wc -l < "$T/declared") EXMY_API functions (the pattern broke?)"; fi
extra=$(comm -13 "$T/declared" "$T/exported" | tr '\n' ' ')
missing=$(comm -23 "$T/declared" "$T/exported" | tr '\n' ' ')
if [ -z "$extra" ]; then pass "nothing exported beyond exmy.h"; else fail "exported but not in exmy.h: $extra"; fi
if [ -z "$missing" ]; then pass "every EXMY_API function exported"; else fail "declared but not exported: $missing"; fi
# Every function prototype in exmy.h carries EXMY_API (none forgotten).
bare=$(grep -nE '^[a-z][a-z0-9_ *]*[ *]exmy_[a-z0-9_]+\(' "$hdr" | grep -v '^[0-9]*:typedef' | head -3)
if [ -z "$bare" ]; then pass "every prototype in exmy.h is EXMY_API"; else fail "prototypes without EXMY_API" "$bare"; fi

# Version: macros, exmy_version(), the command and configure's version.
maj=$(sed -n 's/^#define EXMY_VERSION_MAJOR \([0-9]*\)/\1/p' "$hdr")
min=$(sed -n 's/^#define EXMY_VERSION_MINOR \([0-9]*\)/\1/p' "$hdr")
pat=$(sed -n 's/^#define EXMY_VERSION_PATCH \([0-9]*\)/\1/p' "$hdr")
str=$(sed -n 's/^#define EXMY_VERSION "\(.*\)"/\1/p' "$hdr")
if [ "$maj.$min.$pat" = "$str" ]; then pass "EXMY_VERSION $str matches the MAJOR.MINOR.PATCH macros"
else fail "EXMY_VERSION $str but macros $maj.$min.$pat"; fi
ac=$(sed -n 's/^AC_INIT(\[exmy\], \[\([^]]*\)\].*/\1/p' "${srcdir:-.}/configure.ac")
if [ "$ac" = "$str" ]; then pass "configure.ac's version is $str"; else fail "configure.ac says '$ac', exmy.h $str"; fi
run --version
if grep -q "exmy $str" "$T/out"; then pass "exmy --version says $str"; else fail "exmy --version: $(cat "$T/out")"; fi
finish
