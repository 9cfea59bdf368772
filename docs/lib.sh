# lib.sh: sourced by the docs generators.  run "shell text": print the
# command and its real output (with `exmy` meaning $EXMY) as a markdown block,
# in the scratch folder $tmp.
run() {
  echo '```'
  printf '$ %s\n' "$1" # not echo: dash's echo would expand the \n in commands
  (cd "$tmp" && exmy() { "$EXMY" "$@"; } && eval "$1") 2>&1 || echo "[exit status $?]"
  echo '```'
  echo
}
