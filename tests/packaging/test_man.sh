#!/usr/bin/env bash
# Man pages and bash completion, against the code they describe:
#   - every command main.c dispatches has a page (packaging/man/gpuslice-<verb>.1.scd), and gpuslice(1)
#     names it; every --option a command's --help prints is in its page (global ones in gpuslice(1));
#   - gpuslice.conf(5) documents every section and key of the shipped config (packaging/config.toml,
#     which test_hostconfig ties to the parser);
#   - every built page renders without a warning (MANWIDTH=80 man --warnings -l) and has a NAME line
#     man-db can index (lexgrog);
#   - gpuslice --help lists every command; `gpuslice help VERB` shows the page through man, else VERB --help;
#   - the completion offers exactly main.c's commands, and each command's options from its --help.
set -uo pipefail
SRC=${GS_SOURCE_DIR:?} BUILD=${GS_BUILD_DIR:?}
GS=$BUILD/gpuslice
MAN=$SRC/packaging/man
nfail=0 nok=0
ok() { nok=$((nok + 1)); echo "ok - $1"; }
not_ok() { nfail=$((nfail + 1)); echo "not ok - $1"; }
for t in man lexgrog scdoc; do
        command -v "$t" >/dev/null || { echo "not ok - $t is not installed (make test-deps installs it)"; exit 1; }
done

verbs=$(sed -n 's/^ *{"\([a-z-]*\)", cmd_[a-z_]*},$/\1/p' "$SRC/src/cli/main.c")
[ -n "$verbs" ] || { echo "no commands found in src/cli/main.c"; exit 1; }

# options PAGE CMD...: every --option CMD --help prints is in PAGE
options() {
        local page=$1 missing="" o; shift
        local help
        help=$("$GS" "$@" --help 2>&1) || { not_ok "gpuslice $* --help fails"; return; }
        for o in $(grep -o -- '--[a-z][a-z0-9-]*[a-z0-9]' <<<"$help" | sort -u); do
                grep -qF -- "$o" "$page" || missing="$missing $o"
        done
        if [ -z "$missing" ]; then ok "$(basename "$page"): every option of 'gpuslice $* --help'"; else
                not_ok "$(basename "$page") lacks options of 'gpuslice $* --help':$missing"; fi
}

for v in $verbs; do
        page=$MAN/gpuslice-$v.1.scd
        if [ ! -f "$page" ]; then
                not_ok "command '$v' (src/cli/main.c) has no man page packaging/man/gpuslice-$v.1.scd"
                continue
        fi
        grep -qF "*$v*" "$MAN/gpuslice.1.scd" && grep -qF "*gpuslice-$v*(1)" "$MAN/gpuslice.1.scd" &&
                ok "gpuslice(1) lists '$v' and points to gpuslice-$v(1)" ||
                not_ok "gpuslice(1) does not list '$v' and gpuslice-$v(1)"
        case $v in
        cdi) options "$page" cdi generate; options "$page" cdi list ;;
        mps) for s in start stop status supervise; do options "$page" mps "$s"; done ;;
        runtime) options "$page" runtime; options "$page" runtime configure ;;
        *) options "$page" "$v" ;;
        esac
done
options "$MAN/gpuslice.1.scd"

# gpuslice --help lists every command; `gpuslice help VERB` shows the verb's page through man, and
# its --help where man is not installed.
ghelp=$("$GS" --help 2>&1)
missing=""
for v in $verbs help; do grep -qE "^  $v( |$)" <<<"$ghelp" || missing="$missing $v"; done
[ -z "$missing" ] && ok "gpuslice --help lists every command of src/cli/main.c, and help" ||
        not_ok "gpuslice --help lacks:$missing"
mandir=$(mktemp -d)
trap 'rm -rf "$mandir"' EXIT
chmod 755 "$mandir"  # man may read the pages as its own user
mkdir "$mandir/man1"
for p in "$BUILD"/packaging/gpuslice*.1; do ln -s "$p" "$mandir/man1/"; done
bad_man="" bad_fallback=""
for v in $verbs; do
        out=$(MANPATH=$mandir MANWIDTH=200 "$GS" help "$v" 2>&1)
        grep -qE "^ *gpuslice-$v[ ,]" <<<"$out" || bad_man="$bad_man $v"
        want=$("$GS" "$v" --help 2>&1)
        got=$(PATH=/nonexistent "$GS" help "$v" 2>&1)
        [ -n "$want" ] && [ "$got" = "$want" ] || bad_fallback="$bad_fallback $v"
done
[ -z "$bad_man" ] && ok "gpuslice help VERB shows man's gpuslice-VERB(1) for every command" ||
        not_ok "gpuslice help VERB did not show the man page for:$bad_man"
[ -z "$bad_fallback" ] && ok "without man, gpuslice help VERB prints 'gpuslice VERB --help'" ||
        not_ok "without man, gpuslice help VERB differs from VERB --help for:$bad_fallback"
out=$(MANPATH=$mandir/none PATH=/usr/bin:/bin "$GS" help list 2>&1)
[ "$out" = "$("$GS" list --help 2>&1)" ] && ok "gpuslice help VERB without the page (man installed): its --help" ||
        not_ok "gpuslice help list with man but no page: '$(head -2 <<<"$out")'"
[ "$("$GS" help 2>&1)" = "$ghelp" ] && ok "gpuslice help (no command) prints gpuslice --help" ||
        not_ok "gpuslice help differs from gpuslice --help"
"$GS" help nosuch >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] && ok "gpuslice help nosuch: a usage error (exit 2)" || not_ok "gpuslice help nosuch: exit $rc"

# gpuslice.conf(5) against the shipped config: "[section]" and "#key = " lines.
conf=$MAN/gpuslice.conf.5.scd
missing=""
section=""
while IFS= read -r line; do
        if [[ $line =~ ^\[([a-z-]+)\] ]]; then
                section=${BASH_REMATCH[1]}
                grep -qxF "# [$section]" "$conf" || missing="$missing [$section]"
        elif [[ $line =~ ^#?([a-z][a-z0-9-]*)\ = ]]; then
                key=${BASH_REMATCH[1]}
                # the key's entry, inside its section's part of the page
                awk -v s="# [$section]" -v k="*$key* = " '$0 == s { in_s = 1; next } /^# / { in_s = 0 }
                        in_s && index($0, k) == 1 { found = 1 } END { exit !found }' "$conf" ||
                        missing="$missing $section.$key"
        fi
done <"$SRC/packaging/config.toml"
[ -z "$missing" ] && ok "gpuslice.conf(5) documents every section and key of packaging/config.toml" ||
        not_ok "gpuslice.conf(5) lacks:$missing"

# Built pages: no warnings, an indexable NAME.
pages=$(ls "$BUILD"/packaging/*.[1-8] 2>/dev/null)
n_src=$(ls "$MAN"/*.scd | wc -l)
[ "$(wc -w <<<"$pages")" = "$n_src" ] && ok "$n_src pages built" ||
        not_ok "$n_src page sources, but built: $(echo $pages) (a new page needs meson setup --reconfigure)"
for p in $pages; do
        w=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
        [ -z "$w" ] && ok "$(basename "$p") renders without warnings" ||
                not_ok "$(basename "$p"): $(head -3 <<<"$w")"
        lexgrog "$p" >/dev/null 2>&1 && ok "$(basename "$p") has an indexable NAME section" ||
                not_ok "$(basename "$p"): lexgrog cannot parse its NAME section"
done

# Bash completion.
comp=$SRC/packaging/completion/gpuslice
offered=$(bash -c 'source "$1"; COMP_WORDS=("$2" ""); COMP_CWORD=1; _gpuslice; printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$comp" "$GS" | grep -vx help | sort)
[ "$offered" = "$(sort <<<"$verbs")" ] && ok "completion offers exactly the commands of src/cli/main.c" ||
        not_ok "completion commands differ from main.c: $(diff <(sort <<<"$verbs") - <<<"$offered" | grep '^[<>]' | tr '\n' ' ')"
complete_words() { bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpuslice; echo "${COMPREPLY[*]}"' _ "$comp" "$@"; }
got=$(complete_words "$GS" doctor --c)
[ "$got" = "--cdi-spec --cgroup-root --config" ] && ok "completion: doctor's options from its --help" ||
        not_ok "completion of 'doctor --c': '$got'"
got=$(complete_words "$GS" --root /tmp mps st)
[ "$got" = "start stop status" ] && ok "completion: mps subcommands after a global option" ||
        not_ok "completion of 'mps st': '$got'"
got=$(complete_words "$GS" help cdi)
[ "$got" = "cdi cdi-hook" ] && ok "completion: help offers the commands" || not_ok "completion of 'help cdi': '$got'"
got=$(complete_words "$GS" cdi generate --device-name-strategy t)
[ "$got" = "type-index" ] && ok "completion: an option's values" || not_ok "completion of a strategy: '$got'"

echo "# $nok ok, $nfail not ok"
[ "$nfail" -eq 0 ]
