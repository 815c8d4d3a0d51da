# Set-up of the lent GPU machine for a GPU session (Python 3.12 + torch there; no Ray, no internet).
# Lives in benchmarks/gpu_session/ (README.md there); its payload is what build.sh put in the
# git-ignored .dev/ and each call carries. Source it from the repository root, in every call:
#
#     source benchmarks/gpu_session/bootstrap.sh
#
# What it does (idempotent; every step is skipped when already done):
#   1. unpacks .dev/ray312.tar.xz (Ray 2.60 cp312 + jsonschema, pydantic, tensorboardX, ...)
#      into $DEVROOT/raysite, unless $DEVROOT/raysite/ray exists;
#   2. copies whatever CIFAR-10 pieces this call brought (.dev/cifar/p*) into $DEVROOT/pieces,
#      and once all $(cat COUNT) pieces are there, joins them into
#      $DEVROOT/data/cifar10/cifar10.npz and checks its sha256 (prints OK or FAIL);
#   3. copies .dev/fashion_mnist/fashion_mnist.npz (and .dev/mnist/mnist.npz) when present,
#      checking each against its SHA256;
#   4. unpacks an earlier session's runs (.dev/runs.tgz, else the tracked
#      benchmarks/gpu_session/runs.tgz) into $DEVROOT/runs once, so that the plan's sweeps
#      continue them (--resume);
#   5. exports PYTHONPATH=$DEVROOT/raysite:<repo>, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 and
#      SBFN_DATA_DIR=$DEVROOT/data (pipeline.sh, started from the same shell, inherits them).
# DEVROOT defaults to /tmp (override for a local simulation: DEVROOT=/tmp/devsim).
# It never calls `exit`: a failure prints "bootstrap: ... FAIL..." and makes `source` return 1
# (each step checks its own errors: the body runs as an `if` condition, where bash suspends
# `set -e`). `set -e` is set while it runs, and the caller's own errexit setting is restored at
# the end, so a later failing command does not end the caller's shell unless it had set -e itself.

case $- in *e*) _bs_had_e=1 ;; *) _bs_had_e=0 ;; esac
set -e

_bs_main() {
    local devroot repo dev raysite pieces data count want have="" i name missing="" got ds runs
    devroot="${DEVROOT:-/tmp}"
    repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"   # the repo root, two folders up
    dev="$repo/.dev"
    raysite="$devroot/raysite"
    pieces="$devroot/pieces"
    data="$devroot/data"
    mkdir -p "$devroot" "$pieces" "$data/cifar10" || return 1

    # 1. Ray and the packages Tune needs
    if [ -d "$raysite/ray" ]; then
        echo "bootstrap: ray: $raysite (already there)"
    elif [ -f "$dev/ray312.tar.xz" ]; then
        rm -rf "$raysite.part" && mkdir -p "$raysite.part" || return 1
        if tar -xJf "$dev/ray312.tar.xz" -C "$raysite.part"; then
            rm -rf "$raysite" && mv "$raysite.part" "$raysite" || return 1
            echo "bootstrap: ray: unpacked into $raysite"
        else
            rm -rf "$raysite.part"
            echo "bootstrap: ray: FAILED to unpack $dev/ray312.tar.xz" >&2
            return 1
        fi
    else
        echo "bootstrap: ray: MISSING ($raysite/ray absent and no .dev/ray312.tar.xz in this call: carry it in call 1)" >&2
    fi

    # 2. CIFAR-10 pieces -> $pieces -> cifar10.npz
    for f in "$dev"/cifar/p[0-9]*; do
        [ -f "$f" ] || continue
        name="$(basename "$f")"
        if [ ! -f "$pieces/$name" ] || [ "$(stat -c %s "$f")" != "$(stat -c %s "$pieces/$name")" ]; then
            cp "$f" "$pieces/$name.part" && mv "$pieces/$name.part" "$pieces/$name" || return 1
            echo "bootstrap: cifar10: piece $name stored in $pieces"
        fi
    done
    for name in COUNT SHA256; do
        if [ -f "$dev/cifar/$name" ]; then cp "$dev/cifar/$name" "$pieces/$name" || return 1; fi
    done
    if [ -f "$data/cifar10/cifar10.npz" ]; then
        echo "bootstrap: cifar10: $data/cifar10/cifar10.npz (already there)"
    elif [ ! -f "$pieces/COUNT" ] || [ ! -f "$pieces/SHA256" ]; then
        echo "bootstrap: cifar10: not yet (no COUNT/SHA256 seen yet)"
    else
        count="$(tr -d '[:space:]' < "$pieces/COUNT")"
        missing=""
        for ((i = 0; i < count; i++)); do
            name="$(printf 'p%02d' "$i")"
            [ -f "$pieces/$name" ] || missing="$missing $name"
        done
        if [ -n "$missing" ]; then
            echo "bootstrap: cifar10: waiting for pieces:$missing (have: $(cd "$pieces" && ls p[0-9]* 2>/dev/null | tr '\n' ' '))"
        else
            want="$(awk '{print $1; exit}' "$pieces/SHA256")"
            : > "$data/cifar10/cifar10.npz.part"
            for ((i = 0; i < count; i++)); do
                cat "$pieces/$(printf 'p%02d' "$i")" >> "$data/cifar10/cifar10.npz.part" || return 1
            done
            got="$(sha256sum "$data/cifar10/cifar10.npz.part" | awk '{print $1}')"
            if [ "$got" = "$want" ]; then
                mv "$data/cifar10/cifar10.npz.part" "$data/cifar10/cifar10.npz" || return 1
                echo "bootstrap: cifar10: sha256 OK -> $data/cifar10/cifar10.npz"
            else
                rm -f "$data/cifar10/cifar10.npz.part"
                echo "bootstrap: cifar10: sha256 FAIL (got $got, want $want); pieces kept in $pieces" >&2
                return 1
            fi
        fi
    fi

    # 3. the small data sets, when this call brought them
    for ds in fashion_mnist mnist; do
        [ -f "$dev/$ds/$ds.npz" ] || continue
        mkdir -p "$data/$ds" || return 1
        if [ ! -f "$data/$ds/$ds.npz" ] || ! cmp -s "$dev/$ds/$ds.npz" "$data/$ds/$ds.npz"; then
            cp "$dev/$ds/$ds.npz" "$data/$ds/$ds.npz.part" || return 1
            if [ -f "$dev/$ds/SHA256" ]; then
                want="$(awk '{print $1; exit}' "$dev/$ds/SHA256")"
                got="$(sha256sum "$data/$ds/$ds.npz.part" | awk '{print $1}')"
                if [ "$got" != "$want" ]; then
                    rm -f "$data/$ds/$ds.npz.part"
                    echo "bootstrap: $ds: sha256 FAIL" >&2
                    return 1
                fi
            fi
            mv "$data/$ds/$ds.npz.part" "$data/$ds/$ds.npz" || return 1
            echo "bootstrap: $ds: sha256 OK -> $data/$ds/$ds.npz"
        fi
    done
    for ds in cifar10 fashion_mnist mnist; do
        if [ -f "$data/$ds/$ds.npz" ]; then have="$have $ds"; fi
    done
    echo "bootstrap: data sets in $data:${have:- none}"

    # 4. an earlier session's runs (.dev/runs.tgz: its out.tgz's runs.tgz), unpacked once into
    #    $devroot/runs, where the plan's sweeps continue them with --resume (README.md)
    #    (or, when no call brings one, the tracked benchmarks/gpu_session/runs.tgz)
    runs="$dev/runs.tgz"; [ -f "$runs" ] || runs="$repo/benchmarks/gpu_session/runs.tgz"
    if [ -f "$runs" ] && [ ! -f "$devroot/runs/.earlier" ]; then
        mkdir -p "$devroot/runs" && tar -xzf "$runs" -C "$devroot" || return 1
        touch "$devroot/runs/.earlier"
        echo "bootstrap: runs: an earlier session's sweeps in $devroot/runs: $(ls "$devroot/runs" | tr '\n' ' ')"
    fi

    # 5. the environment
    export PYTHONPATH="$raysite:$repo"
    export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
    export SBFN_DATA_DIR="$data"
    return 0
}

if _bs_main; then _bs_rc=0; else _bs_rc=$?; fi
unset -f _bs_main
[ "$_bs_had_e" = 1 ] || set +e
unset _bs_had_e
# `source benchmarks/gpu_session/bootstrap.sh` returns 0 when all went well (and 1 after a "bootstrap: ... FAIL")
return "$_bs_rc" 2>/dev/null || true
