#!/usr/bin/env bash
# `make build`: one `go build` of every binary, which on a fresh machine compiles some 700 packages for many
# minutes while go build itself prints nothing. This runs it with -v (go build then names each package it compiles;
# packages already in the build cache are not named) and prints, every ZOEA_BUILD_PROGRESS_EVERY seconds (default 5),
# how many of the packages that need compiling are done, so a first build never goes quiet:
#   building: 312 of 731 packages compiled (2m05s)
# The count to reach is what `go list` says is stale (not yet in the build cache), so a rebuild after a small change
# counts a few packages, not all of them; once they are done it says it is linking. Arguments are go build's; its errors are shown as they come and its exit
# status is this script's.
set -euo pipefail
every=${ZOEA_BUILD_PROGRESS_EVERY:-5}
pkgs=() list_flags=()
for a in "$@"; do
  case $a in
    ./*) pkgs+=("$a") ;;
    -trimpath) list_flags+=(-trimpath) ;; # it changes what the build cache holds, so staleness is judged with it
  esac
done
start=$SECONDS
elapsed() { local s=$((SECONDS - start)); if ((s >= 60)); then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi; }
echo "building: finding what to compile…"
# go list downloads the modules first on a fresh machine (it says so itself: "go: downloading …") and, with an empty
# build cache, hashes every source file: it may take a minute, so it is waited for with a line every few seconds too.
# The binaries' own packages are linked, not just compiled, and go build -v names them when it compiles them, or not
# at all when only the link is to do: they are left out of the count, which then ends where linking starts.
list_file=$(mktemp)
status_file=$(mktemp)
trap 'rm -f "$list_file" "$status_file"' EXIT
go list "${list_flags[@]}" -deps -f '{{if eq .Name "main"}}main {{.ImportPath}}{{else if .Stale}}stale {{.ImportPath}}{{end}}' "${pkgs[@]}" >"$list_file" &
lister=$! last=$SECONDS
while kill -0 "$lister" 2>/dev/null; do
  sleep 1
  if ((every > 0 && SECONDS - last >= every)); then
    echo "building: finding what to compile… ($(elapsed))"
    last=$SECONDS
  fi
done
wait "$lister" || true # go build below reports what go list could not read
declare -A binaries=()
total=0
while read -r kind path; do
  case $kind in
    main) binaries[$path]=1 ;;
    stale) total=$((total + 1)) ;;
  esac
done <"$list_file"
n=0 last=$SECONDS partial=""
progress() {
  if ((n >= total)); then
    echo "building: $total of $total packages compiled, linking the binaries ($(elapsed))"
  else
    echo "building: $n of $total packages compiled ($(elapsed))"
  fi
}
# Lines of go build -v that are import paths count; anything else (errors, "# pkg" headers, downloads) is shown.
while :; do
  if IFS= read -r -t 1 line; then
    line=$partial$line partial=""
    if [[ $line != *' '* && $line != '#'* && -n $line ]]; then
      [ -n "${binaries[$line]:-}" ] || n=$((n + 1))
    else
      printf '%s\n' "$line"
    fi
  else
    status=$?
    if ((status > 128)); then
      partial+=$line # timed out mid-line: the rest comes with the next read
    else
      [ -z "$partial$line" ] || printf '%s\n' "$partial$line"
      break
    fi
  fi
  if ((SECONDS - last >= every)); then
    progress
    last=$SECONDS
  fi
done < <(go build -v "$@" 2>&1; echo "$?" >"$status_file")
status=$(cat "$status_file")
if [ "$status" != 0 ]; then
  echo "build failed after $(elapsed) ($n of $total packages compiled)" >&2
  exit "$status"
fi
echo "built in $(elapsed): $n packages compiled, the rest were in the build cache"
