# lib.sh: sourced by the docs generators.  run "shell text": print the
# command and its real output (with `exmy` meaning $EXMY) as a markdown block,
# in the scratch folder $tmp.
run() {
  echo '```'
  echo "\$ $1"
  (cd "$tmp" && exmy() { "$EXMY" "$@"; } && eval "$1") 2>&1 || echo "[exit status $?]"
  echo '```'
  echo
}
