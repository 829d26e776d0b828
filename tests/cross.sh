#!/bin/sh
# make cross: build the core test suite for each target (two builds at a
# time, in two lanes) and start its run under qemu-user as soon as it is
# built (the runs wait on real time more than they compute, so they
# overlap the builds); then one summary line per target and build.
# Arguments: the build directory, then "target:emulator[:prefix]" items
# (prefix: where a dynamically linked binary's libraries are, qemu's -L).
B=$1; shift
start=$(date +%s)
run() { # $1 binary name (kt-<target>[-nothreads]), $2 emulator[:prefix]
    log=$B/cross/$1.log
    s=$(date +%s)
    case $2 in
    *:*) KT_EMULATED=1 timeout 900 "${2%%:*}" -L "${2#*:}" "./$B/cross/$1" > "$log.tmp" 2>&1 ;;
    *) KT_EMULATED=1 timeout 900 "$2" "./$B/cross/$1" > "$log.tmp" 2>&1 ;;
    esac
    echo "exit $? after $(( $(date +%s) - s )) s" >> "$log.tmp"
    mv "$log.tmp" "$log"
}
lane() { # builds in turn, each run in the background
    for b in "$@"; do
        name=${b%%:*}; emu=${b#*:}
        if make -s --no-print-directory "$B/cross/$name"; then run "$name" "$emu" &
        else echo "exit build failed" > "$B/cross/$name.log"; fi
    done
    wait
}
mkdir -p "$B/cross"
rm -f "$B"/cross/*.log
# the slower runs first; one lane takes the odd builds, the other the even
a=""; b=""; i=0
for t in "$@"; do
    for v in "" -nothreads; do
        item="kt-${t%%:*}$v:${t#*:}"
        if [ $((i % 2)) -eq 0 ]; then a="$a $item"; else b="$b $item"; fi
        i=$((i + 1))
    done
done
lane $a & lane $b & wait
bad=0
for t in "$@"; do
    for v in "" -nothreads; do
        name=kt-${t%%:*}$v; log=$B/cross/$name.log
        sum=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
        took=$(tail -n 1 "$log")
        grep -E '^(FAIL|skip [a-z_/]+:)' "$log" | sed "s|^|  ${t%%:*}$v: |"
        printf 'cross %-18s %s (%s)\n' "${t%%:*}${v:- default}" "${sum:-NO SUMMARY}" "$took"
        case "$sum $took" in *" 0 failed"*"exit 0 "*) ;; *) bad=1 ;; esac
    done
done
echo "make cross: $(( $(date +%s) - start )) s, $( [ $bad -eq 0 ] && echo 'every target passed' || echo FAILED)"
[ $bad -eq 0 ]
