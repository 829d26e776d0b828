#!/bin/sh
# Runs each test binary given, shows its output, and ends with one line
# "N passed, N failed" (", N skipped") adding up every binary's counts.
# A binary that prints no summary line (a demo, the C++ check) counts as one
# test: passed when it exits 0. Each binary's line says how long it ran
# (wall seconds), so that a slow CI run shows where its time went.
#
# KT_JOBS binaries run at once (default: one per online CPU), each taking
# the next one in the order given: the suites that spend their time waiting
# on servers (kt-etcd, kt-kube) overlap the ones that compute. The output
# is shown in the order given, each binary's once it has ended. No two
# binaries of one suite share a port, a file or a directory: the servers
# take ports of their own, the stores and agents directories of their own.
jobs=${KT_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
case "$jobs" in '' | *[!0-9]* | 0) jobs=1 ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kt-matrix.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# One lane: every binary not yet taken by another lane (mkdir is atomic),
# in order; its output to N.out, then "exit-code seconds" to N.rc.
lane() {
    i=0
    for bin in "$@"; do
        i=$((i + 1))
        mkdir "$tmp/taken.$i" 2>/dev/null || continue
        t0=$(date +%s)
        timeout "${KT_TIMEOUT:-600}" "./$bin" > "$tmp/$i.out" 2>&1
        echo "$? $(( $(date +%s) - t0 ))" > "$tmp/$i.rc.part"
        mv "$tmp/$i.rc.part" "$tmp/$i.rc"
    done
}
k=0
while [ "$k" -lt "$jobs" ]; do
    lane "$@" &
    k=$((k + 1))
done

passed=0; failed=0; skipped=0; i=0
for bin in "$@"; do
    i=$((i + 1))
    while [ ! -f "$tmp/$i.rc" ]; do sleep 1; done
    name=$(basename "$bin")
    read -r rc secs < "$tmp/$i.rc"
    took="$secs s"
    summary=$(tail -n 1 "$tmp/$i.out")
    case "$summary" in
    *" passed, "*" failed"*)
        sed '$d' "$tmp/$i.out"
        p=$(printf '%s' "$summary" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
        f=$(printf '%s' "$summary" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
        s=$(printf '%s' "$summary" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
        echo "$name: $summary ($took)"
        passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
        if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then failed=$((failed + 1)); echo "$name: exit code $rc"; fi
        ;;
    *)
        if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); echo "$name: ok ($took)";
        else failed=$((failed + 1)); tail -n 20 "$tmp/$i.out"; echo "$name: FAILED (exit $rc, $took)"; fi
        ;;
    esac
done
wait
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"
else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
