#!/usr/bin/env bash
# Builds tablekit's two OCI images and checks what can be checked without
# running a container; `make images` runs it (README, "Install"):
#
#   tablekit-emulator:VERSION   tablekit emulator, build/emulator/Dockerfile
#   tablekit-worker:VERSION     tablekit-worker, build/worker/Dockerfile
#
# Both start FROM scratch with static binaries built here (CGO_ENABLED=0,
# -trimpath), cross-compiled for linux/amd64 and linux/arm64 (GOARCH), so
# the build pulls nothing and runs no command inside a container: it works
# offline, where containers cannot run, and needs no emulation of the
# other architecture. Each name is one image for both architectures (a
# manifest list); NAME:VERSION-amd64 and NAME:VERSION-arm64 are each
# architecture's image alone. podman builds the manifest list itself;
# docker needs its containerd image store (docker buildx build --load of
# two platforms).
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
# After building it checks the manifest lists (amd64 and arm64), and each
# architecture's image: its configuration (a numeric user that is not
# root, the entrypoint and command, the exposed ports, the volume, the
# emulator's healthcheck in exec form and its environment), its contents
# (the binary, byte for byte the one built here for that architecture, a
# static executable of it; Azurite's four commands linked to it; the
# worker's CA bundle), and runs the build machine's binaries taken out of
# the images outside any container: the emulator as the image's command
# runs it (azurite ..., Azurite's start lines) and its healthcheck, the
# worker with --version. It ends with each image's size.
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

ARCHES="amd64 arm64"
HOSTARCH=$("$GO" env GOHOSTARCH)
rm -rf "$OUT"
mkdir -p "$OUT/data" "$OUT/links" "$OUT/run/tablekit"
chmod 1777 "$OUT/run/tablekit"
for a in $ARCHES; do
	echo "images: go build (static, -trimpath, linux/$a) into $OUT/$a"
	# -buildvcs=auto stamps the commit into the binaries (tablekit version),
	# whatever GOFLAGS says; -s -w leave out the symbol table and DWARF, which
	# a stack trace does not need.
	mkdir -p "$OUT/$a"
	CGO_ENABLED=0 GOOS=linux GOARCH=$a "$GO" build -trimpath -buildvcs=auto -ldflags='-s -w' -o "$OUT/$a/" ./cmd/tablekit ./cmd/tablekit-worker
done
# The links the image's PATH finds Azurite's commands by (build/emulator).
for l in azurite azurite-blob azurite-queue azurite-table tablekit; do
	ln -s /tablekit "$OUT/links/$l"
done
cp "$CA_BUNDLE" "$OUT/ca-certificates.crt"

labels=(
	--label "org.opencontainers.image.version=$VERSION"
	--label "org.opencontainers.image.revision=$REVISION"
	--label "org.opencontainers.image.source=https://github.com/tablekit/tablekit"
	--label "org.opencontainers.image.licenses=MIT"
)
build() { # name dockerfile-dir
	local a platforms=
	for a in $ARCHES; do
		echo "images: $ENGINE build $1:$VERSION-$a (linux/$a)"
		# podman writes the healthcheck only in docker's format (OCI's has
		# no field for it).
		"$ENGINE" build ${PODMAN_FORMAT:+--format docker} --platform "linux/$a" -f "build/$2/Dockerfile" -t "$1:$VERSION-$a" \
			--label "org.opencontainers.image.title=$1" "${labels[@]}" "$OUT"
		platforms+=${platforms:+,}linux/$a
	done
	echo "images: $1:$VERSION, a manifest list of $platforms"
	if [ "$ENGINE" = podman ]; then
		podman manifest rm "$1:$VERSION" >/dev/null 2>&1 || podman rmi "$1:$VERSION" >/dev/null 2>&1 || true
		podman manifest create "$1:$VERSION" >/dev/null
		for a in $ARCHES; do
			podman manifest add "$1:$VERSION" "containers-storage:localhost/$1:$VERSION-$a" >/dev/null
		done
	else
		docker buildx build --platform "$platforms" --load -f "build/$2/Dockerfile" -t "$1:$VERSION" \
			--label "org.opencontainers.image.title=$1" "${labels[@]}" "$OUT" ||
			fail "docker stores a manifest list only in its containerd image store (docker info: driver-type io.containerd.snapshotter.v1); turn it on, or ENGINE=podman"
	fi
}
PODMAN_FORMAT=
[ "$ENGINE" = podman ] && PODMAN_FORMAT=1
build tablekit-emulator emulator
build tablekit-worker worker

# ---- check --------------------------------------------------------------------

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

inspect() { "$ENGINE" image inspect --format "$2" "$1"; }

# check_list name: NAME:VERSION is a manifest list of exactly ARCHES, on linux.
check_list() {
	local got
	if [ "$ENGINE" = podman ]; then
		got=$(podman manifest inspect "$1" | "$GO" run ./build/platforms.go)
	else
		got=$(docker buildx imagetools inspect --raw "$1" 2>/dev/null | "$GO" run ./build/platforms.go) ||
			got=$(docker manifest inspect "$1" | "$GO" run ./build/platforms.go)
	fi
	[ "$got" = "$(printf 'linux/%s\n' $ARCHES)" ] || fail "$1: platforms \"$got\", want $ARCHES"
	echo "images: $1 is a manifest list of" $got
}

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

# static file arch: file is a static linux/arch executable (ELF machine
# arch, no interpreter, Go's cgo off).
static() {
	local want machine
	case $2 in amd64) want=3e00 ;; arm64) want=b700 ;; *) fail "unknown architecture $2" ;; esac
	machine=$(od -An -tx1 -j18 -N2 "$1" | tr -d ' \n')
	[ "$(head -c4 "$1" | od -An -c | tr -d ' \n')" = 177ELF ] || fail "$1 is not an ELF file"
	[ "$machine" = "$want" ] || fail "$1: ELF machine $machine, want $want ($2)"
	"$GO" version -m "$1" | grep -q "GOARCH=$2\$" || fail "$1 was not built for GOARCH=$2"
	"$GO" version -m "$1" | grep -q 'CGO_ENABLED=0' || fail "$1 was not built with CGO_ENABLED=0"
	! grep -q 'ld-linux\|ld-musl' "$1" || fail "$1 names a dynamic loader"
	if command -v file >/dev/null; then
		file -b "$1" | grep -q 'statically linked' || fail "$1: $(file -b "$1")"
		echo "images: $1: $(file -b "$1" | cut -d, -f1-2,4)"
	fi
}

emu=tablekit-emulator:$VERSION
wrk=tablekit-worker:$VERSION
check_list "$emu"
check_list "$wrk"
for a in $ARCHES; do
	check_config "$emu-$a" null '10000/tcp 10001/tcp 10002/tcp ' '/data ' '["azurite","-l","/data","--blobHost","0.0.0.0","--queueHost","0.0.0.0","--tableHost","0.0.0.0"]'
	check_config "$wrk-$a" '["/tablekit-worker"]' '9090/tcp ' '' null
	for img in "$emu-$a" "$wrk-$a"; do
		arch=$(inspect "$img" '{{.Os}}/{{.Architecture}}')
		[ "$arch" = "linux/$a" ] || fail "$img: platform $arch, want linux/$a"
	done
	health=$(inspect "$emu-$a" '{{json .Config.Healthcheck.Test}}')
	[ "$health" = '["CMD","/tablekit","emulator","health"]' ] || fail "$emu-$a: healthcheck $health, want [\"CMD\",\"/tablekit\",\"emulator\",\"health\"] (exec form: no shell in the image)"
	env=$(inspect "$emu-$a" '{{range .Config.Env}}{{.}} {{end}}')
	[[ " $env" == *" PATH=/usr/local/bin:"* && " $env" == *" TABLEKIT_EMULATOR_STATUS=/run/tablekit/emulator.json "* ]] || fail "$emu-$a: environment \"$env\", want PATH with /usr/local/bin and TABLEKIT_EMULATOR_STATUS"
	echo "images: $emu-$a: healthcheck $health; $env"

	unpack "$emu-$a" "$tmp/emu-$a"
	same "emu-$a" tablekit "$OUT/$a/tablekit"
	static "$tmp/emu-$a/tablekit" "$a"
	for l in azurite azurite-blob azurite-queue azurite-table tablekit; do
		grep -Eq "^l\S+ 0/0 .* usr/local/bin/$l -> /tablekit\$" "$tmp/emu-$a.list" || fail "$emu-$a: /usr/local/bin/$l is not a link to /tablekit:"$'\n'"$(cat "$tmp/emu-$a.list")"
	done
	grep -Eq '^d\S+ 65532/65532 .* data/?$' "$tmp/emu-$a.list" || fail "$emu-$a: /data is not a directory owned by 65532:"$'\n'"$(cat "$tmp/emu-$a.list")"
	grep -Eq '^drwxrwxrwt .* run/tablekit/?$' "$tmp/emu-$a.list" || fail "$emu-$a: /run/tablekit is not a directory of mode 1777:"$'\n'"$(cat "$tmp/emu-$a.list")"
	unpack "$wrk-$a" "$tmp/wrk-$a"
	same "wrk-$a" tablekit-worker "$OUT/$a/tablekit-worker"
	static "$tmp/wrk-$a/tablekit-worker" "$a"
	same "wrk-$a" etc/ssl/certs/ca-certificates.crt "$CA_BUNDLE"
done
certs=$(grep -c 'BEGIN CERTIFICATE' "$tmp/wrk-amd64/etc/ssl/certs/ca-certificates.crt")
echo "images: $wrk holds /etc/ssl/certs/ca-certificates.crt, $certs certificates from $CA_BUNDLE"

# The build machine's binaries, as the images hold them, outside any container.
case " $ARCHES " in *" $HOSTARCH "*) ;; *) echo "images: no image of this machine's architecture ($HOSTARCH): nothing run"; exit 0 ;; esac
emubin=$tmp/emu-$HOSTARCH/tablekit
echo "images: $("$emubin" --version), $("$tmp/wrk-$HOSTARCH/tablekit-worker" --version)"
# The emulator as the image's command runs it: under the name azurite
# (a link, as in the image), the image's arguments, on free ports, its
# /data a directory here, its status file where the healthcheck reads it.
ln -s "$emubin" "$tmp/azurite"
args=$(inspect "$emu-$HOSTARCH" '{{range $i, $a := .Config.Cmd}}{{if $i}}{{$a}} {{end}}{{end}}')
args=${args//\/data/$tmp/data}
mkdir -p "$tmp/data"
export TABLEKIT_EMULATOR_STATUS=$tmp/status.json
# shellcheck disable=SC2086 # the arguments are words without spaces
"$tmp/azurite" $args --blobPort 0 --queuePort 0 --tablePort 0 >"$tmp/emu.out" 2>"$tmp/emu.err" &
pid=$!
for _ in $(seq 50); do [ -f "$TABLEKIT_EMULATOR_STATUS" ] && break; sleep 0.1; done
"$emubin" emulator health >"$tmp/health.out" 2>&1 || fail "tablekit emulator health: $(cat "$tmp/health.out" "$tmp/emu.err")"
kill -TERM "$pid"
wait "$pid" || fail "azurite $args: exit $?: $(cat "$tmp/emu.err")"
for s in Blob Queue Table; do
	grep -Eq "^Azurite $s service is successfully listening at http://0\.0\.0\.0:[0-9]+\$" "$tmp/emu.out" ||
		fail "azurite $args printed no \"Azurite $s service is successfully listening at\": $(cat "$tmp/emu.out" "$tmp/emu.err")"
done
[ -f "$tmp/data/tables.db" ] || fail "azurite $args kept nothing in $tmp/data"
echo "images: the emulator ran outside as the image's command does (azurite ${args% }), printed Azurite's start lines, kept its data, and its healthcheck said: $(cat "$tmp/health.out")"

for img in "$emu-amd64" "$emu-arm64" "$wrk-amd64" "$wrk-arm64"; do
	printf 'images: %-40s %s MB\n' "$img" "$(inspect "$img" '{{.Size}}' | awk '{printf "%.1f", $1/1e6}')"
done
