#!/usr/bin/env bash
# Builds, HERE (not on the GPU machine), what a GPU session carries to the lent machine, in the
# git-ignored folder .dev/ (README.md beside this file says how the calls use it):
#   .dev/ray312.tar.xz            Ray + the packages Tune needs, cp312 wheels at the versions of
#                                 constraints.txt, unzipped into one tree, trimmed, stripped, tar -cJf
#   .dev/cifar/p00.. COUNT SHA256 $DATA/cifar10/cifar10.npz cut into pieces that fit the calls
#   .dev/fashion_mnist/, .dev/mnist/   the npz and its SHA256
# and prints the table of device calls: the `carry` paths of each and its bytes, working tree
# included (each must stay under 64 MiB = 67,108,864 bytes). Also kept in .dev/calls.txt.
#
#   bash benchmarks/gpu_session/build.sh [--force] [--wheels DIR] [--tree-only]
#
#   (none)         keep .dev/ray312.tar.xz if it exists; re-plan and re-cut the data pieces
#   --force        download the wheels again and rebuild the tarball
#   --wheels DIR   rebuild the tarball from the wheels in DIR (no download)
#   --tree-only    stop once the trimmed tree is in $BUILD_DIR/tree (to check it; no tarball)
# Environment: SBFN_DATA_DIR (default ../shared/data), PYTHON (a Python with pip; default
# .venv/bin/python), BUILD_DIR (scratch; default /tmp/gpu_session_build), MARGIN (bytes kept
# free in every call for the working tree to grow; default 2 MiB).
set -euo pipefail

die() { echo "build.sh: $*" >&2; exit 1; }
[ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$PWD" ] && [ -f constraints.txt ] \
    || die "run it from the repository root: bash benchmarks/gpu_session/build.sh"

FORCE=0; WHEELS=""; TREE_ONLY=0
while [ $# -gt 0 ]; do
    case $1 in
        --force) FORCE=1 ;;
        --wheels) WHEELS=${2:?--wheels needs a folder}; shift ;;
        --tree-only) TREE_ONLY=1 ;;
        *) die "unknown option $1 (see the header of $0)" ;;
    esac
    shift
done

DEV=.dev
DATA=${SBFN_DATA_DIR:-../shared/data}
PY=${PYTHON:-.venv/bin/python}; [ -x "$PY" ] || PY=python3
BUILD=${BUILD_DIR:-/tmp/gpu_session_build}
TARBALL=$DEV/ray312.tar.xz
LIMIT=67108864                  # 64 MiB a call: working tree + carried paths
MIB=1048576
MARGIN=${MARGIN:-$((2 * MIB))}
PKGS=(ray jsonschema jsonschema-specifications referencing rpds-py pydantic pydantic-core
      annotated-types typing-inspection typing-extensions tensorboardX attrs)
STRIP=(ray/_raylet.so ray/core/src/ray/raylet/raylet ray/core/src/ray/gcs/gcs_server)

mkdir -p "$DEV"
exclude=$(git rev-parse --git-path info/exclude)
grep -qxF '/.dev/' "$exclude" 2>/dev/null || { echo '/.dev/' >> "$exclude"; echo "added /.dev/ to $exclude"; }

# --- 1. the Ray tarball -------------------------------------------------------------------
pin() {  # the version constraints.txt pins for a package (names compared as PEP 503 does)
    awk -F'==' -v want="$1" 'BEGIN { want = tolower(want); gsub(/[-_.]+/, "-", want) }
        { n = tolower($1); gsub(/[-_.]+/, "-", n); gsub(/[ \t]/, "", n)
          if (n == want) { v = $2; sub(/[ \t;#].*/, "", v); print v; exit } }' constraints.txt
}

if [ -f "$TARBALL" ] && [ $FORCE = 0 ] && [ -z "$WHEELS" ] && [ $TREE_ONLY = 0 ]; then
    echo "ray: $TARBALL exists ($(stat -c %s "$TARBALL") bytes): kept (--force rebuilds it)"
else
    if [ -z "$WHEELS" ]; then
        WHEELS=$BUILD/whl
        specs=()
        for p in "${PKGS[@]}"; do
            v=$(pin "$p"); [ -n "$v" ] || die "constraints.txt pins no version of $p"
            specs+=("$p==$v")
        done
        rm -rf "$WHEELS"; mkdir -p "$WHEELS"
        echo "ray: downloading ${specs[*]}"
        "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
            --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
            --platform manylinux_2_28_x86_64 -d "$WHEELS" "${specs[@]}" \
            || die "pip could not download the wheels (no network? no cp312 manylinux wheel of a
    pinned version?): see pip's message above. A folder of the wheels can be given with --wheels DIR."
    fi
    n=$(find "$WHEELS" -maxdepth 1 -name '*.whl' | wc -l)
    [ "$n" = "${#PKGS[@]}" ] || die "$WHEELS holds $n wheels, expected ${#PKGS[@]} (${PKGS[*]})"
    tree=$BUILD/tree
    rm -rf "$tree"; mkdir -p "$tree"
    for w in "$WHEELS"/*.whl; do unzip -q -o "$w" -d "$tree"; done
    (cd "$tree" && rm -rf ray/jars ray/rllib ray/llm ray/serve ray/dashboard/client/build \
        && find . -name '*.js.map' -delete)
    for f in "${STRIP[@]}"; do
        [ -f "$tree/$f" ] || die "$f is not in Ray's wheel (its layout changed? find $tree -name $(basename "$f"))"
        strip "$tree/$f"
    done
    echo "ray: trimmed tree in $tree ($(du -sb "$tree" | cut -f1) bytes)"
    [ $TREE_ONLY = 0 ] || exit 0
    tar -cJf "$TARBALL.part" -C "$tree" . && mv "$TARBALL.part" "$TARBALL"
    rm -rf "$tree"
    echo "ray: wrote $TARBALL ($(stat -c %s "$TARBALL") bytes)"
fi

# --- 2. the data sets ---------------------------------------------------------------------
npz=$DATA/cifar10/cifar10.npz
[ -f "$npz" ] || die "no $npz (set SBFN_DATA_DIR)"
for ds in fashion_mnist mnist; do
    [ -f "$DATA/$ds/$ds.npz" ] || die "no $DATA/$ds/$ds.npz"
    mkdir -p "$DEV/$ds"
    cmp -s "$DATA/$ds/$ds.npz" "$DEV/$ds/$ds.npz" || cp "$DATA/$ds/$ds.npz" "$DEV/$ds/$ds.npz"
    (cd "$DEV/$ds" && sha256sum "$ds.npz" > SHA256)
done

# What travels with every call: tracked and untracked-not-ignored files (and an ignored shared/).
tree_bytes=$( { git ls-files -z -co --exclude-standard; git ls-files -z -o -i --exclude-standard -- shared; } \
    | xargs -0 -r stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
budget=$((LIMIT - tree_bytes - MARGIN))        # bytes a call may carry
tar_bytes=$(stat -c %s "$TARBALL")
npz_bytes=$(stat -c %s "$npz")
# Call 1 carries Ray, call 2 Fashion-MNIST (plan.txt's sweep needs no more); CIFAR-10's pieces
# follow, one a call (the first with COUNT and SHA256), for plans that use it.
[ $tar_bytes -le $budget ] || die "the tarball ($tar_bytes bytes) does not fit a call beside the working tree ($tree_bytes)"
first=$(( (budget - 256) / MIB * MIB ))               # p00 (+ COUNT, SHA256)
full=$(( budget / MIB * MIB ))                        # later calls: one piece each
[ $first -lt $npz_bytes ] || first=$npz_bytes
sizes=($first); rest=$((npz_bytes - first))
while [ $rest -gt 0 ]; do s=$(( rest < full ? rest : full )); sizes+=($s); rest=$((rest - s)); done

mkdir -p "$DEV/cifar"; rm -f "$DEV"/cifar/p[0-9]*
off=0
for i in "${!sizes[@]}"; do
    dd if="$npz" of="$DEV/cifar/$(printf 'p%02d' "$i")" bs=1M iflag=skip_bytes,count_bytes \
        skip=$off count="${sizes[$i]}" status=none
    off=$((off + sizes[i]))
done
echo "${#sizes[@]}" > "$DEV/cifar/COUNT"
(cd "$DATA/cifar10" && sha256sum cifar10.npz) > "$DEV/cifar/SHA256"
[ "$(cat "$DEV"/cifar/p[0-9]* | sha256sum | cut -d' ' -f1)" = "$(cut -d' ' -f1 "$DEV/cifar/SHA256")" ] \
    || die "the pieces do not join back into $npz"
echo "cifar10: ${#sizes[@]} pieces (${sizes[*]} bytes)"

# --- 3. the calls -------------------------------------------------------------------------
bytes() { local b=0 p; for p in "$@"; do b=$((b + $(find "$p" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'))); done; echo $b; }
carry=(".dev/ray312.tar.xz" ".dev/fashion_mnist" ".dev/cifar/p00 .dev/cifar/COUNT .dev/cifar/SHA256")
for ((i = 1; i < ${#sizes[@]}; i++)); do carry+=("$(printf '.dev/cifar/p%02d' "$i")"); done
note=()
fits() { [ $(( $(bytes ${carry[$1]}) + $(bytes $2) )) -le $budget ]; }
placed=0
for i in "${!carry[@]}"; do
    if fits "$i" .dev/mnist; then carry[$i]+=" .dev/mnist"; placed=1; break; fi
done
[ $placed = 1 ] || { carry+=(".dev/mnist"); note[$(( ${#carry[@]} - 1 ))]="  (optional: plan.txt does not use MNIST)"; }
# An earlier session's runs to continue (README.md "Continuing a sweep"), in the first call with room.
if [ -f "$DEV/runs.tgz" ]; then
    placed=0
    for i in "${!carry[@]}"; do
        if fits "$i" .dev/runs.tgz; then carry[$i]+=" .dev/runs.tgz"; placed=1; break; fi
    done
    [ $placed = 1 ] || carry+=(".dev/runs.tgz")
fi

{
    printf 'working tree %d bytes; limit %d a call; margin kept %d\n' "$tree_bytes" "$LIMIT" "$MARGIN"
    printf '%-5s %14s  %s\n' call "total bytes" "carry"
    for i in "${!carry[@]}"; do
        total=$((tree_bytes + $(bytes ${carry[$i]})))
        [ $total -lt $LIMIT ] || die "call $((i + 1)) would send $total bytes (limit $LIMIT)"
        json=$(printf '"%s", ' ${carry[$i]}); json="[${json%, }]"
        printf '%-5s %14d  %s%s\n' $((i + 1)) "$total" "$json" "${note[$i]:-}"
    done
} | tee "$DEV/calls.txt"
