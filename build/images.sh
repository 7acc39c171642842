#!/usr/bin/env bash
# Builds tablekit's two OCI images and checks what can be checked without
# running a container; `make images` runs it (README, "Install"):
#
#   tablekit-emulator:VERSION   tablekit emulator, build/emulator/Dockerfile
#   tablekit-worker:VERSION     tablekit-worker, build/worker/Dockerfile
#
# Both start FROM scratch with static binaries built here (CGO_ENABLED=0,
# -trimpath), so the build pulls nothing and runs no command inside a
# container: it works offline, and where containers cannot run.
#
# Settings (environment; the Makefile passes its variables of these names):
#   ENGINE     docker or podman; by default docker when its daemon answers,
#              else podman
#   VERSION    the images' tag; by default git describe --tags --always --dirty
#              (v0.1.0 at that tag)
#   CA_BUNDLE  the CA certificates copied into the worker's image; by default
#              the build machine's /etc/ssl/certs/ca-certificates.crt
#   GO         the go command
#
# After building it checks each image's configuration (a numeric user that
# is not root, the entrypoint, the exposed ports, the volume), its contents
# (the binary, byte for byte the one built here; the worker's CA bundle) and
# runs the binaries taken out of the images outside any container: the
# emulator with the image's own entrypoint arguments, the worker with
# --version. It ends with each image's size.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
OUT=bin/images
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)

fail() { echo "images: $*" >&2; exit 1; }

if [ -z "${ENGINE:-}" ]; then
	if command -v docker >/dev/null && timeout 20 docker info >/dev/null 2>&1; then
		ENGINE=docker
	elif command -v podman >/dev/null; then
		ENGINE=podman
	else
		fail "no docker daemon answers and podman is missing: apt-get install podman (or start docker)"
	fi
fi
[[ $VERSION =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || fail "VERSION=$VERSION is not an image tag (letters, digits, _ . -, at most 128)"
[ -s "$CA_BUNDLE" ] && grep -q 'BEGIN CERTIFICATE' "$CA_BUNDLE" || fail "CA_BUNDLE=$CA_BUNDLE holds no certificate (Debian and Ubuntu: apt-get install ca-certificates)"

# ---- build --------------------------------------------------------------------

rm -rf "$OUT"
mkdir -p "$OUT/data"
echo "images: go build (static, -trimpath) into $OUT"
# -buildvcs=auto stamps the commit into the binaries (tablekit version),
# whatever GOFLAGS says; -s -w leave out the symbol table and DWARF, which
# a stack trace does not need.
CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=auto -ldflags='-s -w' -o "$OUT/" ./cmd/tablekit ./cmd/tablekit-worker
cp "$CA_BUNDLE" "$OUT/ca-certificates.crt"

build() { # name dockerfile-dir
	echo "images: $ENGINE build $1:$VERSION"
	"$ENGINE" build -f "build/$2/Dockerfile" -t "$1:$VERSION" \
		--label "org.opencontainers.image.title=$1" \
		--label "org.opencontainers.image.version=$VERSION" \
		--label "org.opencontainers.image.revision=$REVISION" \
		--label "org.opencontainers.image.source=https://github.com/tablekit/tablekit" \
		--label "org.opencontainers.image.licenses=MIT" \
		"$OUT"
}
build tablekit-emulator emulator
build tablekit-worker worker

# ---- check --------------------------------------------------------------------

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

inspect() { "$ENGINE" image inspect --format "$2" "$1"; }

# check_config image entrypoint-json ports volumes cmd-json
check_config() {
	local user entry cmd ports vols
	user=$(inspect "$1" '{{.Config.User}}')
	[[ $user =~ ^[0-9]+(:[0-9]+)?$ && ${user%%:*} != 0 ]] || fail "$1: user \"$user\", want a number other than 0 (root)"
	entry=$(inspect "$1" '{{json .Config.Entrypoint}}')
	[ "$entry" = "$2" ] || fail "$1: entrypoint $entry, want $2"
	cmd=$(inspect "$1" '{{json .Config.Cmd}}')
	[ "$cmd" = "$5" ] || fail "$1: cmd $cmd, want $5"
	ports=$(inspect "$1" '{{range $p, $_ := .Config.ExposedPorts}}{{$p}} {{end}}')
	[ "$ports" = "$3" ] || fail "$1: exposed ports \"$ports\", want \"$3\""
	vols=$(inspect "$1" '{{range $v, $_ := .Config.Volumes}}{{$v}} {{end}}')
	[ "$vols" = "$4" ] || fail "$1: volumes \"$vols\", want \"$4\""
	ports=${ports% } vols=${vols% }
	echo "images: $1: user $user, entrypoint $entry, cmd $cmd, ports ${ports:-none}, volumes ${vols:-none}"
}

# unpack image dir: the image's file system, from a container created (never
# started) and exported.
unpack() {
	local id
	id=$("$ENGINE" create "$1")
	"$ENGINE" export "$id" >"$tmp/fs.tar"
	"$ENGINE" rm "$id" >/dev/null
	mkdir -p "$2"
	tar -xf "$tmp/fs.tar" -C "$2" --no-same-owner --exclude=dev --exclude=proc --exclude=sys
	tar --numeric-owner -tvf "$tmp/fs.tar" >"$2.list"
	rm "$tmp/fs.tar"
}

# same image-path built-file: the image holds the file built here, unchanged.
same() {
	[ -f "$tmp/$1/$2" ] || fail "$1 holds no /$2"
	cmp -s "$tmp/$1/$2" "$3" || fail "$1: /$2 differs from $3"
}

emu=tablekit-emulator:$VERSION
wrk=tablekit-worker:$VERSION
check_config "$emu" '["/tablekit","emulator","--host","0.0.0.0"]' '10000/tcp 10001/tcp 10002/tcp ' '/data ' '["--location","/data"]'
check_config "$wrk" '["/tablekit-worker"]' '9090/tcp ' '' null

unpack "$emu" "$tmp/emu"
same emu tablekit "$OUT/tablekit"
grep -Eq '^d\S+ 65532/65532 .* data/?$' "$tmp/emu.list" || fail "$emu: /data is not a directory owned by 65532:"$'\n'"$(cat "$tmp/emu.list")"
unpack "$wrk" "$tmp/wrk"
same wrk tablekit-worker "$OUT/tablekit-worker"
same wrk etc/ssl/certs/ca-certificates.crt "$CA_BUNDLE"
certs=$(grep -c 'BEGIN CERTIFICATE' "$tmp/wrk/etc/ssl/certs/ca-certificates.crt")
echo "images: $wrk holds /etc/ssl/certs/ca-certificates.crt, $certs certificates from $CA_BUNDLE"

# The binaries, as the images hold them, outside any container.
for b in "$tmp/emu/tablekit" "$tmp/wrk/tablekit-worker"; do
	"$GO" version -m "$b" | grep -q 'CGO_ENABLED=0' || fail "$b was not built with CGO_ENABLED=0"
done
echo "images: $("$tmp/emu/tablekit" --version), $("$tmp/wrk/tablekit-worker" --version)"
# The emulator with the image's entrypoint and default arguments, on free
# ports, its /data a directory here.
args=$(inspect "$emu" '{{range $i, $a := .Config.Entrypoint}}{{if $i}}{{$a}} {{end}}{{end}}{{range .Config.Cmd}}{{.}} {{end}}')
args=${args//\/data/$tmp/data}
mkdir -p "$tmp/data"
# shellcheck disable=SC2086 # the arguments are words without spaces
timeout --preserve-status -s TERM 5 "$tmp/emu/tablekit" $args --table-port 0 --queue-port 0 --blob-port 0 >"$tmp/emu.out" 2>"$tmp/emu.err" ||
	fail "tablekit $args: exit $?: $(cat "$tmp/emu.err")"
grep -q '^DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;' "$tmp/emu.out" ||
	fail "tablekit $args printed no connection string: $(cat "$tmp/emu.out" "$tmp/emu.err")"
[ -f "$tmp/data/tables.db" ] || fail "tablekit $args kept nothing in $tmp/data"
echo "images: the emulator ran outside with its entrypoint's and default arguments (${args% }) and served, keeping its data"

for img in "$emu" "$wrk"; do
	printf 'images: %-32s %s MB\n' "$img" "$(inspect "$img" '{{.Size}}' | awk '{printf "%.1f", $1/1e6}')"
done
