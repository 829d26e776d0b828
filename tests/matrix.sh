#!/bin/sh
# Runs each test binary given, shows its output, and ends with one line
# "N passed, N failed" (", N skipped") adding up every binary's counts.
# A binary that prints no summary line (a demo, the C++ check) counts as one
# test: passed when it exits 0.
passed=0; failed=0; skipped=0
for bin in "$@"; do
    name=$(basename "$bin")
    out=$(timeout "${KT_TIMEOUT:-600}" "./$bin" 2>&1); rc=$?
    summary=$(printf '%s\n' "$out" | tail -n 1)
    case "$summary" in
    *" passed, "*" failed"*)
        printf '%s\n' "$out" | sed '$d'
        p=$(printf '%s' "$summary" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
        f=$(printf '%s' "$summary" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
        s=$(printf '%s' "$summary" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
        echo "$name: $summary"
        passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
        if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then failed=$((failed + 1)); echo "$name: exit code $rc"; fi
        ;;
    *)
        if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); echo "$name: ok";
        else failed=$((failed + 1)); printf '%s\n' "$out" | tail -n 20; echo "$name: FAILED (exit $rc)"; fi
        ;;
    esac
done
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"
else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
