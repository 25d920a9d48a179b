#!/usr/bin/env bash
# Shows that check_docs.sh fails: each case copies README.md and docs/ (the rest of the source
# tree linked in), edits the copy once, and requires the check to exit 1 with a message naming
# what the edit broke.
# usage: check_docs_fails.sh SOURCE_DIR QGRAD_BINARY
set -uo pipefail
src=$1
qgrad=$2
check=$(dirname "$0")/check_docs.sh
failures=0

# case NAME EXPECTED_MESSAGE FILE SED_SCRIPT
case_fails() {
  local name=$1 expected=$2 file=$3 script=$4 dir out rc entry
  dir=$(mktemp -d) || exit 1
  for entry in "$src"/* "$src"/.[!.]*; do
    [[ -e $entry ]] || continue
    case ${entry##*/} in README.md | docs) ;; *) ln -s "$entry" "$dir/${entry##*/}" ;; esac
  done
  cp -r "$src/README.md" "$src/docs" "$dir/"
  cp "$dir/$file" "$dir/$file.orig"
  sed -i "$script" "$dir/$file"
  if cmp -s "$dir/$file" "$dir/$file.orig"; then
    echo "check_docs_fails: $name: the edit changed nothing in $file"
    failures=$((failures + 1))
  else
    rm "$dir/$file.orig"
    out=$(bash "$check" "$dir" "$qgrad")
    rc=$?
    if [[ $rc -eq 1 ]] && grep -qF -- "$expected" <<<"$out"; then
      echo "check_docs_fails: $name: fails as it should (exit 1: $expected)"
    else
      echo "check_docs_fails: $name: exit $rc without the message '$expected':"
      echo "$out"
      failures=$((failures + 1))
    fi
  fi
  rm -rf "$dir"
}

case_fails "a link to a missing file" "README.md: link to 'docs/testing-gone.md': no file" \
  README.md 's|(docs/testing.md)|(docs/testing-gone.md)|'
case_fails "a renamed heading" "no heading with the slug 'config-keys' in docs/cli.md" \
  docs/cli.md 's/^## Config keys$/## Configuration keys/'
case_fails "an undocumented config key" "the config key 'quant.calibration.stride'" \
  docs/cli.md '/^| `quant.calibration.stride` |/d'
case_fails "an undocumented option" "the option '--no-plots'" \
  docs/cli.md '/^| `--no-plots` |/d'
case_fails "an undocumented command" "the command 'sensitivity'" \
  docs/cli.md 's/`qgrad sensitivity/`qgrad-sensitivity/g'

exit $((failures > 0))
