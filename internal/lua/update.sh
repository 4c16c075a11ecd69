#!/bin/sh
# Re-derives internal/lua from upstream gopher-lua: copies the release's
# library sources (no tests, cmd/ or _* directories), rewrites the import
# paths and applies locknode.patch. Run from anywhere; then review
# `git diff` and run `go test ./fsm/`.
#
#   internal/lua/update.sh            # re-derive this copy
#   internal/lua/update.sh --diff     # rewrite locknode.patch from this copy
set -eu
V=v1.1.2
here=$(cd "$(dirname "$0")" && pwd)
up=$(go env GOMODCACHE)/github.com/yuin/gopher-lua@$V
[ -d "$up" ] || GOFLAGS=-mod=mod go mod download "github.com/yuin/gopher-lua@$V"

pristine=$(mktemp -d)
trap 'rm -rf "$pristine"' EXIT
copy() { # src dir, dst dir
	mkdir -p "$2"
	for f in "$1"/*.go; do
		case $(basename "$f") in _* | *_test.go) continue ;; esac
		cp "$f" "$2/"
	done
}
copy "$up" "$pristine/lua"
for d in ast parse pm; do copy "$up/$d" "$pristine/lua/$d"; done
cp "$up/LICENSE" "$pristine/lua/"
chmod -R u+w "$pristine"
grep -rl 'github.com/yuin/gopher-lua' "$pristine/lua" | xargs sed -i 's#github.com/yuin/gopher-lua#github.com/locknode/locknode/internal/lua#g'

if [ "${1:-}" = --diff ]; then
	cd "$here/.."
	diff -ruN -x PATCH.md -x update.sh -x locknode.patch "$pristine/lua" lua |
		sed -e "s#^--- $pristine/lua#--- lua#" -e "s# $pristine/lua/# upstream/#" -e 's#^\(---\|+++\) \([^\t]*\)\t.*#\1 \2#' >"$here/locknode.patch" || true
	exit 0
fi
cp -r "$here/PATCH.md" "$here/update.sh" "$here/locknode.patch" "$pristine/lua/"
(cd "$pristine" && patch -s -p0 <lua/locknode.patch)
rm -rf "$here"/*
cp -r "$pristine/lua/." "$here/"
