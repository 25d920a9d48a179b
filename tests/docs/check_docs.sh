#!/usr/bin/env bash
# Checks the documentation against itself and against the program:
#  1. every relative link and image of README.md and docs/*.md resolves: the file or folder
#     exists, and a "#anchor" (in a link to a .md file or within the same file) is the slug of one
#     of its headings, by GitHub's rules: lowercase, every character other than a letter, a digit,
#     a space, '-' and '_' dropped, spaces turned into '-', a repeated slug numbered -1, -2, ...
#     Links inside code (fenced blocks and `code spans`) are not links and are not checked.
#  2. every command that `qgrad --help` lists appears in docs/cli.md as `qgrad COMMAND`, every
#     option of `qgrad --help` and of each command's `--help` inside a code span of docs/cli.md,
#     and every config key of `qgrad --help` and `qgrad train --help` as `key`.
# usage: check_docs.sh SOURCE_DIR QGRAD_BINARY
# Prints every problem found; exit status 0 when there is none, 1 otherwise, 2 on bad usage.
set -uo pipefail
export LC_ALL=C

if [[ $# -ne 2 || ! -d $1 || ! -x $2 ]]; then
  echo "usage: check_docs.sh SOURCE_DIR QGRAD_BINARY" >&2
  exit 2
fi
src=$1
qgrad=$2
problems=0
problem() {
  echo "check_docs: $*"
  problems=$((problems + 1))
}

# The slugs of a markdown file's headings, one a line (headings inside fenced code are not).
heading_slugs() {
  awk '
    /^ ? ? ?(```|~~~)/ { fenced = !fenced; next }
    fenced { next }
    /^#+[ \t]/ && match($0, /^#+/) && RLENGTH <= 6 {
      text = $0
      sub(/^#+[ \t]+/, "", text)
      sub(/[ \t]+#+[ \t]*$/, "", text)
      sub(/[ \t]+$/, "", text)
      slug = tolower(text)
      gsub(/[^a-z0-9 _-]/, "", slug)
      gsub(/ /, "-", slug)
      if (slug in seen) { seen[slug]++; slug = slug "-" seen[slug] } else { seen[slug] = 0 }
      print slug
    }' "$1"
}

# The link targets of a markdown file, one a line: [text](target), ![alt](target), code removed.
# Paragraphs are read whole, so a code span that wraps over a line break is removed as well.
link_targets() {
  awk '
    function flush(   text, target) {
      text = para
      para = ""
      while (match(text, /`[^`]*`/)) text = substr(text, 1, RSTART - 1) substr(text, RSTART + RLENGTH)
      while (match(text, /\]\([^)[:space:]]+/)) {
        target = substr(text, RSTART + 2, RLENGTH - 2)
        sub(/^</, "", target)
        sub(/>$/, "", target)
        print target
        text = substr(text, RSTART + RLENGTH)
      }
    }
    /^ ? ? ?(```|~~~)/ { flush(); fenced = !fenced; next }
    fenced { next }
    /^[ \t]*$/ { flush(); next }
    { para = para "\n" $0 }
    END { flush() }' "$1"
}

check_links() {
  local file=$1 dir target path anchor resolved
  dir=$(dirname "$file")
  while IFS= read -r target; do
    case $target in
      [a-zA-Z]*:*) continue ;;  # http:, https:, mailto: ...
    esac
    path=${target%%#*}
    anchor=""
    [[ $target == *"#"* ]] && anchor=${target#*#}
    if [[ -z $path ]]; then
      resolved=$file
    else
      resolved=$dir/$path
      if [[ ! -e $resolved ]]; then
        problem "${file#"$src"/}: link to '$target': no file $path"
        continue
      fi
    fi
    if [[ -n $anchor ]]; then
      if [[ $resolved != *.md || ! -f $resolved ]]; then
        problem "${file#"$src"/}: link to '$target': an anchor into something that is not a .md file"
      elif ! heading_slugs "$resolved" | grep -qxF -- "$anchor"; then
        problem "${file#"$src"/}: link to '$target': no heading with the slug '$anchor' in ${resolved#"$src"/}"
      fi
    fi
  done < <(link_targets "$file")
}

docs=("$src/README.md" "$src"/docs/*.md)
for f in "${docs[@]}"; do
  check_links "$f"
done

# --- the program's commands, options and config keys in docs/cli.md
cli_md=$src/docs/cli.md
[[ -f $cli_md ]] || { problem "docs/cli.md is missing"; echo "check_docs: $problems problem(s)"; exit 1; }

main_help=$("$qgrad" --help) || problem "qgrad --help failed"
train_help=$("$qgrad" train --help) || problem "qgrad train --help failed"

# The commands: the lines of "commands:" up to the first blank line, indented by two spaces.
mapfile -t commands < <(awk '/^commands:/ { on = 1; next } on && /^[ \t]*$/ { exit }
                             on && /^  [a-z]/ { print $1 }' <<<"$main_help")
# The config keys: the lines after the "key default meaning" header, indented by two spaces.
keys_of() {
  awk '/^  key +default +meaning/ { on = 1; next } on && /^[ \t]*$/ { exit }
       on && /^  [a-z]/ { print $1 }' <<<"$1"
}
mapfile -t keys < <({ keys_of "$main_help"; keys_of "$train_help"; } | sort -u)
# So that a change of the help's layout fails here instead of checking nothing.
((${#commands[@]} >= 5)) || problem "found only ${#commands[@]} commands in qgrad --help: ${commands[*]-}"
((${#keys[@]} >= 20)) || problem "found only ${#keys[@]} config keys in qgrad --help"

# A regular expression matching its argument literally.
literal() { sed 's/[][\.*^$+?(){}|/]/\\&/g' <<<"$1"; }

for cmd in "${commands[@]}"; do
  grep -qE "\`qgrad $(literal "$cmd")[\` ]" "$cli_md" ||
    problem "docs/cli.md: the command '$cmd' (qgrad --help) is not documented as \`qgrad $cmd\`"
done
for key in "${keys[@]}"; do
  grep -qF "\`$key\`" "$cli_md" ||
    problem "docs/cli.md: the config key '$key' (qgrad --help, qgrad train --help) is not documented as \`$key\`"
done

# The options: every --name in qgrad --help and in the --help of each command (`qgrad help`
# itself takes a command name, not --help).
options_of() { grep -oE -- '--[a-z0-9][a-z0-9-]*' <<<"$1"; }
declare -A option_source=()
while IFS= read -r opt; do option_source[$opt]="qgrad --help"; done < <(options_of "$main_help")
for cmd in "${commands[@]}"; do
  [[ $cmd == help ]] && continue
  if ! cmd_help=$("$qgrad" "$cmd" --help); then
    problem "qgrad $cmd --help failed"
    continue
  fi
  while IFS= read -r opt; do
    [[ -n ${option_source[$opt]-} ]] || option_source[$opt]="qgrad $cmd --help"
  done < <(options_of "$cmd_help")
done
((${#option_source[@]} >= 10)) || problem "found only ${#option_source[@]} options in the commands' help"
for opt in "${!option_source[@]}"; do
  grep -qE "\`[^\`]*$(literal "$opt")([^a-z0-9\`-][^\`]*)?\`" "$cli_md" ||
    problem "docs/cli.md: the option '$opt' (${option_source[$opt]}) is not in a code span"
done

if ((problems > 0)); then
  echo "check_docs: $problems problem(s)"
  exit 1
fi
echo "check_docs: the links of README.md and docs/*.md resolve; docs/cli.md documents" \
  "${#commands[@]} commands, ${#option_source[@]} options and ${#keys[@]} config keys"
