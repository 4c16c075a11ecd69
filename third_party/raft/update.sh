#!/bin/sh
# The fork is upstream hashicorp/raft plus locknode.patch (FORK.md says
# what the patch changes and why). This script keeps the two in step:
#
#   third_party/raft/update.sh           # re-derive this tree: upstream + patch
#   third_party/raft/update.sh --diff    # rewrite locknode.patch from this tree
#   third_party/raft/update.sh --check   # fail unless upstream + patch == this tree
#
# To move to a newer upstream release, change V, run it, resolve what the
# patch no longer applies to, then --diff and `cd third_party/raft && go test .`.
set -eu
V=v1.7.3
here=$(cd "$(dirname "$0")" && pwd)
up=$(go env GOMODCACHE)/github.com/hashicorp/raft@$V
[ -d "$up" ] || (cd "$here" && GOFLAGS=-mod=mod go mod download "github.com/hashicorp/raft@$V")

pristine=$(mktemp -d)
trap 'rm -rf "$pristine"' EXIT
mkdir -p "$pristine/raft"
# Upstream's tree without its bench/ and docs/ modules and release script.
(cd "$up" && tar cf - --exclude=./bench --exclude=./docs --exclude=./tag.sh .) | (cd "$pristine/raft" && tar xf -)
chmod -R u+w "$pristine"

ours="-x FORK.md -x update.sh -x locknode.patch"
case "${1:-}" in
--diff)
	(cd "$pristine" && diff -ruN $ours raft "$here") |
		sed -e "s#^\(---\|+++\) $pristine/raft#\1 raft#" -e "s#^\(---\|+++\) $here#\1 raft#" \
			-e 's#^\(---\|+++\) \([^\t]*\)\t.*#\1 \2#' -e "s#^diff -ruN .*#diff -ruN#" >"$here/locknode.patch" || true
	exit 0
	;;
esac
(cd "$pristine" && patch -s -p0 <"$here/locknode.patch")
if [ "${1:-}" = --check ]; then
	if ! diff -r $ours "$pristine/raft" "$here" >/dev/null; then
		echo "third_party/raft differs from upstream $V + locknode.patch; run third_party/raft/update.sh --diff" >&2
		diff -r $ours "$pristine/raft" "$here" | head -20 >&2
		exit 1
	fi
	exit 0
fi
cp "$here/FORK.md" "$here/update.sh" "$here/locknode.patch" "$pristine/raft/"
rm -rf "$here"/*
cp -r "$pristine/raft/." "$here/"
