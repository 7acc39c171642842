#!/bin/sh
# npm-ci.sh DIR: the packages DIR/package-lock.json pins, in DIR/node_modules,
# installed once per machine.
#
# `npm ci` writes every package afresh (Azurite's 457 packages, 365 MB: 31 s
# of wall and CPU on a 2-core machine), and a fresh clone has no
# node_modules, so each CI run paid for it. The install is kept instead under
# the user's cache, one directory per lock file's content (its SHA-256, and
# Node's major version, since packages may build for it), and DIR/node_modules
# is a symbolic link to it. A changed lock file is a new directory; an
# install that did not finish is never used (it is renamed into place only
# when npm ci succeeded), and two installs at once each finish, the second
# keeping the first's.
#
# TABLEKIT_NPM_CACHE moves the cache (default: $XDG_CACHE_HOME/tablekit/npm,
# or ~/.cache/tablekit/npm); TABLEKIT_NPM_CACHE=off installs into DIR as
# plain `npm ci` does.
set -eu

dir=${1:?usage: npm-ci.sh DIR}
lock="$dir/package-lock.json"
test -f "$lock" || { echo "npm-ci.sh: $lock does not exist" >&2; exit 1; }

root=${TABLEKIT_NPM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/tablekit/npm}
npm_ci() { npm ci --prefix "$1" --no-audit --no-fund --loglevel=error; }

if [ "$root" = off ]; then
	# A link left by a cached install would make npm write into the cache.
	if [ -L "$dir/node_modules" ]; then rm "$dir/node_modules"; fi
	npm_ci "$dir"
	exit 0
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
key=$(cat "$lock" "$dir/package.json" | sha256sum | cut -c1-32)-node$node_major
cached="$root/$key"

if [ ! -f "$cached/node_modules/.package-lock.json" ]; then
	mkdir -p "$root"
	tmp=$(mktemp -d "$root/.install-XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	cp "$dir/package.json" "$lock" "$tmp/"
	npm_ci "$tmp"
	# A directory renamed onto an existing one fails: another install
	# finished first, and its copy is as good as this one.
	mv -T "$tmp" "$cached" 2>/dev/null || true
	test -f "$cached/node_modules/.package-lock.json" || {
		echo "npm-ci.sh: the install in $cached did not finish" >&2
		exit 1
	}
fi

# node_modules in DIR from an earlier plain npm ci is replaced by the link.
if [ -e "$dir/node_modules" ] && [ ! -L "$dir/node_modules" ]; then
	rm -rf "$dir/node_modules"
fi
ln -sfn "$cached/node_modules" "$dir/node_modules"
