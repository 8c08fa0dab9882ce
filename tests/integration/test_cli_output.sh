#!/bin/sh
# Output files (-o) never clobber: a FIFO is written through, not replaced;
# a link planted at the old predictable temporary name (TARGET.tmp.PID) or
# at the target itself never leads to the file it points to; a directory is
# refused by name; a missing folder gives a clear error; and no file other
# than the target appears or changes. Usage: test_cli_output.sh MRC
set -u
MRC=$1
tmp=$(mktemp -d)
reader=
trap '[ -n "$reader" ] && kill "$reader" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

# state DIR: every entry of DIR with its type and contents, to compare.
state() {
    (cd "$1" && for f in * .[!.]*; do
        [ -e "$f" ] || [ -L "$f" ] || continue
        if [ -L "$f" ]; then
            echo "$f -> $(readlink "$f")"
        elif [ -p "$f" ]; then
            echo "$f fifo"
        elif [ -d "$f" ]; then
            echo "$f dir"
        else
            echo "$f $(cksum <"$f")"
        fi
    done)
}

# same A B: the two states are the same.
same() {
    if cmp -s "$1" "$2"; then
        echo same
    else
        diff "$1" "$2"
    fi
}

compile() {
    "$MRC" compile ring:4 --collective allreduce --count 64 --dtype float32 \
        "$@"
}

# ---- a FIFO is written through ----
d=$tmp/fifo
mkdir "$d"
mkfifo "$d/out.dot"
cat "$d/out.dot" >"$tmp/fifo.got" &
reader=$!
expect 0 "wrote" "$MRC" topo draw ring:4 -o "$d/out.dot"
through=0
if [ -p "$d/out.dot" ]; then
    through=1
    wait "$reader"
else
    kill "$reader" 2>/dev/null # the old code replaced it: no writer comes
fi
reader=
expect 0 "" test "$through" -eq 1
expect 0 "graph topology" cat "$tmp/fifo.got"
expect 0 "^out.dot fifo$" state "$d"

# The same through the external programs (neato) and the image writer.
mkfifo "$d/img"
cat "$d/img" >"$tmp/img.got" &
reader=$!
expect 0 "wrote" compile -o "$d/img"
if [ -p "$d/img" ]; then wait "$reader"; else kill "$reader"; fi
reader=
expect 0 "" test -s "$tmp/img.got"
if command -v neato >/dev/null 2>&1; then
    mkfifo "$d/out.svg"
    cat "$d/out.svg" >"$tmp/svg.got" &
    reader=$!
    expect 0 "wrote" "$MRC" rings ring:4 -o "$d/out.svg"
    if [ -p "$d/out.svg" ]; then wait "$reader"; else kill "$reader"; fi
    reader=
    expect 0 "</svg>" cat "$tmp/svg.got"
    # With standard input closed the pipe to neato takes descriptor 0.
    expect 0 "wrote" sh -c 'exec "$1" rings ring:4 -o "$2" <&-' sh "$MRC" \
        "$tmp/closed.svg"
    expect 0 "</svg>" cat "$tmp/closed.svg"
fi

# ---- a link planted at the old predictable temporary name ----
# sh -c runs as the pid that exec keeps, so the old name was known.
d=$tmp/planted
mkdir "$d"
echo precious >"$d/victim"
state "$d" >"$tmp/before"
expect 0 "wrote" sh -c 'ln -s "$1/victim" "$1/out.dot.tmp.$$" &&
    exec "$2" topo draw ring:4 -o "$1/out.dot"' sh "$d" "$MRC"
expect 0 "^precious$" cat "$d/victim"
expect 0 "graph topology" cat "$d/out.dot"
expect 0 "" test ! -L "$d/out.dot"
expect 0 "" compile -o "$d/image"
# Nothing but the targets (and the planted link) appeared or changed.
state "$d" | grep -v '^out.dot \|^image \|^out.dot.tmp' >"$tmp/after"
expect 0 "^same$" same "$tmp/before" "$tmp/after"

# ---- a link at the target is replaced, the file it pointed to is not ----
d=$tmp/link
mkdir "$d"
echo precious >"$d/victim"
ln -s victim "$d/out.dot"
expect 0 "wrote" "$MRC" topo draw ring:4 -o "$d/out.dot"
expect 0 "^precious$" cat "$d/victim"
expect 0 "graph topology" cat "$d/out.dot"
if command -v gnuplot >/dev/null 2>&1; then
    # gnuplot once wrote PREFIX.svg itself, following a link there.
    ln -s victim "$d/s.svg"
    expect 0 "wrote .*s.svg" "$MRC" sim ring:4 --sweep 1K:2K \
        --collective allreduce -o "$d/s"
    expect 0 "^precious$" cat "$d/victim"
    expect 0 "</svg>" cat "$d/s.svg"
fi

# A link to a device is replaced too: never followed to the device.
ln -s /dev/null "$d/null.dot"
expect 0 "wrote" "$MRC" topo draw ring:4 -o "$d/null.dot"
expect 0 "graph topology" cat "$d/null.dot"
expect 0 "" test ! -L "$d/null.dot"

# ---- a FIFO of another user in a shared sticky folder is refused ----
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
    d=$tmp/sticky
    mkdir "$d"
    chmod 1777 "$d"
    mkfifo "$d/trap.dot"
    chown nobody "$d/trap.dot"
    expect 1 "$d/trap.dot: a FIFO of another user in a shared directory" \
        "$MRC" topo draw ring:4 -o "$d/trap.dot"
    expect 0 "" test -p "$d/trap.dot"
fi

# ---- a directory is refused, naming it ----
d=$tmp/dir
mkdir -p "$d/out.dot" "$d/image"
expect 1 "cannot write $d/out.dot: it is a directory" \
    "$MRC" topo draw ring:4 -o "$d/out.dot"
expect 1 "$d/image: it is a directory" compile -o "$d/image"
expect 0 "^out.dot dir$" state "$d"
expect 0 "^image dir$" state "$d"

# ---- a missing or read-only folder: a clear error, no leftovers ----
expect 1 "$tmp/missing/out.dot" "$MRC" topo draw ring:4 \
    -o "$tmp/missing/out.dot"
expect 1 "$tmp/missing/s.csv" "$MRC" sim ring:4 --sweep 1K:2K \
    --collective allreduce -o "$tmp/missing/s"
expect 1 "" test -e "$tmp/missing"
if [ "$(id -u)" -ne 0 ]; then # root writes anywhere
    d=$tmp/ro
    mkdir "$d"
    chmod 0555 "$d"
    expect 1 "cannot create $d/out.dot" "$MRC" topo draw ring:4 \
        -o "$d/out.dot"
    expect 0 "^$" state "$d"
    chmod 0755 "$d"
fi

# ---- a helper that fails: the target stays as it was, nothing is left ----
d=$tmp/failing
mkdir -p "$d/bin"
printf '#!/bin/sh\ncat >/dev/null\necho half a picture\nexit 1\n' \
    >"$d/bin/gnuplot"
chmod +x "$d/bin/gnuplot"
echo "old picture" >"$d/s.svg"
expect 0 "gnuplot failed to write $d/s.svg" env PATH="$d/bin:$PATH" \
    "$MRC" sim ring:4 --sweep 1K:2K --collective allreduce -o "$d/s"
expect 0 "^old picture$" cat "$d/s.svg"
state "$d" | grep -v '^s\.csv \|^s\.json \|^s\.svg ' >"$tmp/got"
echo "bin dir" >"$tmp/want"
expect 0 "^same$" same "$tmp/want" "$tmp/got" # no temporary left

# ---- devices: only once the FIFO showed that this mrc writes through ----
if [ "$through" -eq 1 ]; then
    expect 0 "wrote" compile -o /dev/null
    expect 0 "" test -c /dev/null
    # A device that fails every write: the error, and the device stays.
    if [ -c /dev/full ]; then
        expect 1 "cannot write /dev/full: No space left" compile -o /dev/full
        expect 0 "" test -c /dev/full
    fi
    # /dev/stdout: the image comes first on standard output (redirected to
    # a file here), then the report.
    compile -o "$tmp/file.img" >/dev/null 2>&1
    compile -o /dev/stdout >"$tmp/stdout.img" 2>/dev/null
    expect 0 "" sh -c 'head -c "$(wc -c <"$1")" "$2" | cmp - "$1"' sh \
        "$tmp/file.img" "$tmp/stdout.img"
fi
expect_summary
