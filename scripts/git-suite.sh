#!/bin/sh
# Run git's own test scripts with gitwire in place of git's serving side.
#
#   scripts/git-suite.sh [--stock] [-v] t5411-proc-receive-hook t5516-fetch-push ...
#
# Needs a built git source tree with its t/ (GIT_SRC, default: the tree
# that $GITWIRE_GIT_2_55 was installed from, found as $GITWIRE_GIT_2_55/../src)
# and the installed git (GITWIRE_GIT_2_55). It makes a directory of wrappers
# that t/test-lib.sh uses through GIT_TEST_INSTALLED and GIT_TEST_EXEC_PATH:
# a `git` that sends `cat-file`, `upload-pack` and `receive-pack` to
# gitwire and everything else to the installed git, and an exec path whose
# git-upload-pack and git-receive-pack are gitwire's. --stock runs the
# same scripts against the installed git alone, for the comparison.
# Prints one line per script: passed/total and the failed test numbers.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
stock=
verbose=
while [ $# -gt 0 ]; do
  case "$1" in
    --stock) stock=1; shift ;;
    -v) verbose=1; shift ;;
    --) shift; break ;;
    -*) echo "usage: $0 [--stock] [-v] t-script..." >&2; exit 129 ;;
    *) break ;;
  esac
done
inst=${GITWIRE_GIT_2_55:?set GITWIRE_GIT_2_55 to an installed git 2.55}
src=${GIT_SRC:-$inst/../src}
[ -x "$inst/bin/git" ] || { echo "fatal: no git at $inst/bin/git" >&2; exit 128; }
[ -f "$src/t/test-lib.sh" ] || { echo "fatal: no git test suite at $src/t (set GIT_SRC)" >&2; exit 128; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gitwire-suite.XXXXXX")
[ -n "${GITWIRE_SUITE_KEEP-}" ] && echo "work directory: $work" >&2 || trap 'rm -rf "$work"' EXIT INT TERM
bin=$work/bin exec_dir=$work/exec
mkdir -p "$bin" "$exec_dir"
real_exec=$("$inst/bin/git" --exec-path)
for f in "$real_exec"/*; do ln -s "$f" "$exec_dir/$(basename "$f")"; done
if [ -z "$stock" ]; then
  gw="$here/bin/gitwire"
  for s in upload-pack receive-pack; do
    rm -f "$exec_dir/git-$s"
    printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$gw" "$s" > "$exec_dir/git-$s"
    chmod +x "$exec_dir/git-$s"
  done
  # `git [-C dir] cat-file|upload-pack|receive-pack ...` goes to gitwire
  cat > "$bin/git" <<WRAP
#!/bin/sh
cd_to=
while [ \$# -gt 1 ] && [ "\$1" = -C ]; do cd_to="\$cd_to\${cd_to:+/}\$2"; shift 2; done
case "\${1-}" in
  cat-file|upload-pack|receive-pack)
    if [ -n "\$cd_to" ]; then cd "\$cd_to" || exit 128; fi
    exec "$gw" "\$@" ;;
esac
if [ -n "\$cd_to" ]; then exec "$inst/bin/git" -C "\$cd_to" "\$@"; fi
exec "$inst/bin/git" "\$@"
WRAP
else
  printf '#!/bin/sh\nexec "%s" "$@"\n' "$inst/bin/git" > "$bin/git"
fi
chmod +x "$bin/git"
for s in upload-pack receive-pack; do
  if [ -z "$stock" ]; then ln -s "$exec_dir/git-$s" "$bin/git-$s"; else ln -s "$real_exec/git-$s" "$bin/git-$s"; fi
done
status=0
for t in "$@"; do
  t=${t%.sh}
  script=$(ls "$src/t/$t"*.sh 2>/dev/null | head -n 1)
  [ -n "$script" ] || { echo "$t: no such script" >&2; status=1; continue; }
  out=$work/$(basename "$script" .sh).out
  (cd "$src/t" && GIT_TEST_INSTALLED="$bin" GIT_TEST_EXEC_PATH="$exec_dir" \
    TEST_OUTPUT_DIRECTORY="$work" sh "$script" ${verbose:+-v} >"$out" 2>&1) || true
  [ -n "$verbose" ] && cat "$out"
  pass=$(grep -c '^ok ' "$out" || true)
  fail=$(grep -c '^not ok [0-9]* - ' "$out" | head -n 1 || true)
  known=$(grep -c '# TODO known breakage' "$out" || true)
  failed=$(grep '^not ok ' "$out" | grep -v '# TODO' | sed 's/^not ok \([0-9]*\).*/\1/' | tr '\n' ' ')
  echo "$(basename "$script" .sh): $pass/$((pass + fail - known)) passed${failed:+, failed: $failed}"
done
exit $status
