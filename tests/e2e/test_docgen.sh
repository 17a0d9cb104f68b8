#!/usr/bin/env bash
# The generated man pages and bash completion against `--help` (cli/docgen.h, cmake/docs.cmake):
# for `nazar` and every subcommand that `nazar --help` lists, every flag that `--help` prints is
# in the man page (as a bold option in the troff source) and is offered by the bash completion
# (sourced in bash, COMP_WORDS = nazar <cmd> -). The pages format without a warning
# (groff -ww), their NAME line parses (lexgrog) and zsh reads the zsh completion (zsh -n), where
# those tools are installed.
# Usage: test_docgen.sh path/to/nazar MAN_DIR COMPLETION_DIR
MAN=$(cd "${2:?usage: test_docgen.sh NAZAR MAN_DIR COMPLETION_DIR}" && pwd) || exit 1
COMPLETIONS=$(cd "${3:?usage: test_docgen.sh NAZAR MAN_DIR COMPLETION_DIR}" && pwd) || exit 1
. "$(dirname "$0")/lib.sh" "$@"

# The flags of one --help text: the option column of each "  -x,--name ..." line.
help_flags() {
    grep -E '^  -' | sed -E 's/^  ([^ ]+).*/\1/' | tr ',' '\n' | grep -E '^-' | sort -u
}
# The words the bash completion offers for: nazar WORDS... (the last word is completed).
complete_words() {
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _nazar
             printf "%s\n" "${COMPREPLY[@]}"' _ "$COMPLETIONS/nazar" "$@"
}
# \-\-name in troff, as the pages write a flag.
troff_name() { sed 's/-/\\-/g' <<< "$1"; }

commands=$("$NAZAR" --help | sed -n '/^Subcommands:/,$p' | grep -E '^  [a-z]' | awk '{print $1}')
[[ -n $commands ]] || bad "nazar --help lists no subcommands"
[[ -f $MAN/nazar.1 ]] || bad "no $MAN/nazar.1"
checked=0
for cmd in "" $commands; do
    page=$MAN/nazar${cmd:+-$cmd}.1
    if [[ ! -f $page ]]; then
        bad "man page of '${cmd:-nazar}'" "no $page"
        continue
    fi
    # shellcheck disable=SC2086
    flags=$("$NAZAR" $cmd --help | help_flags)
    offered=$(complete_words nazar $cmd -)
    missing_man=() missing_bash=()
    for f in $flags; do
        grep -qF "\\fB$(troff_name "$f")\\fR" "$page" || missing_man+=("$f")
        grep -qxF -- "$f" <<< "$offered" || missing_bash+=("$f")
        checked=$((checked + 1))
    done
    [[ ${#missing_man[@]} -eq 0 ]] || bad "man page of '${cmd:-nazar}'" "missing: ${missing_man[*]}"
    [[ ${#missing_bash[@]} -eq 0 ]] || bad "bash completion of '${cmd:-nazar}'" \
        "not offered: ${missing_bash[*]}"
done
# Every subcommand has a page, and no page is left over from a removed one.
n_pages=$(find "$MAN" -name 'nazar*.1' | wc -l)
n_cmds=$(wc -w <<< "$commands")
[[ $n_pages -eq $((n_cmds + 1)) ]] || bad "pages" "$n_pages pages for $n_cmds commands + nazar(1)"
subs=$(complete_words nazar "" | sort | tr '\n' ' ')
[[ $subs == "$(tr ' ' '\n' <<< "$commands" | sort | tr '\n' ' ')" ]] \
    || bad "bash completion of the subcommands" "offered: $subs" "--help lists: $commands"
[[ $fail -eq 0 ]] && ok "$checked flags of $n_cmds commands: in the man pages and the bash completion"

if command -v groff > /dev/null; then
    for page in "$MAN"/*.1; do
        out=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
        [[ -z $out ]] || bad "groff -ww $(basename "$page")" "$out"
    done
    [[ $fail -eq 0 ]] && ok "groff -man -ww formats every page without a warning"
fi
if command -v lexgrog > /dev/null; then
    for page in "$MAN"/*.1; do
        lexgrog "$page" > /dev/null 2>&1 || bad "lexgrog $(basename "$page")" "$(lexgrog "$page" 2>&1)"
    done
    [[ $fail -eq 0 ]] && ok "lexgrog parses every page's NAME"
fi
if command -v zsh > /dev/null; then
    out=$(zsh -n "$COMPLETIONS/_nazar" 2>&1) && ok "zsh -n reads the zsh completion" \
        || bad "zsh -n $COMPLETIONS/_nazar" "$out"
fi
exit $fail
